"""What must hold of each raw table and mart, declared: the Great Expectations suites.

A ``Suite`` says what must hold, not how: either engine turns it into the same GX expectations
(``paperhouse.quality.validation`` over DuckDB through pandas frames, ``paperhouse.engines.spark.validation`` over
Spark DataFrames). Its SQL (``computed``, ``facts_sql``, ``rows_from``) is written in what DuckDB
and Spark SQL both read, tables named ``raw.<t>`` and ``marts.<t>``.

The raw tables are Python's output, so their suites check everything: nulls, keys, ranges,
counts. On the marts, dbt owns keys and nulls (its tests, and NOT NULL constraints that
DuckDB enforces on insert); their suites check the schema as built, nullability included,
the counts against the raw tables, and value ranges.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from paperhouse.nlp.keyphrases.ranking import KEYPHRASES_PER_PAPER
from paperhouse.nlp.terms.extraction import ALIAS_KINDS, TERM_KINDS
from paperhouse.nlp.terms.keywords import KEYWORD_KIND, MATCHES
from paperhouse.nlp.topics.ids import EVENTS as TOPIC_ID_EVENTS

# Facts: counts the expectations compare against, computed from the warehouse at check time.
Facts = dict[str, int]


@dataclass(frozen=True)
class Suite:
    """What must hold for one table, declared; ``expectations`` turns it into GX expectations."""

    name: str  # the table it validates, e.g. "marts.papers"
    not_null: tuple[str, ...] = ()
    unique: tuple[tuple[str, ...], ...] = ()  # keys, single or compound
    between: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    in_set: dict[str, tuple] = field(default_factory=dict)
    regex: dict[str, str] = field(default_factory=dict)
    computed: dict[str, str] = field(default_factory=dict)  # column -> SQL over the table
    facts_sql: str | None = None  # one row of named counts that ``row_count`` bounds come from
    row_count: Callable[[Facts], tuple[int | None, int | None]] | None = None  # (min, max)
    rows_from: str | None = None  # the FROM clause of the pulled rows, when not the table alone
    # A column of every unique key: on DuckDB, rows sharing its value are validated together, a part of
    # ``quality.ROWS_PER_PART`` rows at a time (Spark needs no parts: its expectations are aggregations).
    # Only for expectations of each row and of keys, which hold of a table if they hold of its parts.
    parts_by: str | None = None

    def __post_init__(self) -> None:
        if self.parts_by and (self.row_count or self.rows_from or any(self.parts_by not in key for key in self.unique)):
            raise ValueError(
                f"{self.name}: parts by {self.parts_by} need it in every unique key, and no row count or join"
            )

    @property
    def schema_name(self) -> str:
        return self.name.split(".")[0]

    @property
    def table_name(self) -> str:
        return self.name.split(".")[1]

    @property
    def columns(self) -> tuple[str, ...]:
        """The only columns validated: those the expectations name."""
        named = [*self.not_null, *(c for key in self.unique for c in key), *self.between, *self.in_set, *self.regex]
        return tuple(dict.fromkeys(named))

    def rows_query(self, quote: str) -> str:
        """The query of the rows the expectations validate, identifiers quoted with ``quote`` (DuckDB's
        ``"``, Spark's backtick). A suite that only counts rows selects one constant per row."""
        select = ", ".join(
            f"{self.computed[c]} as {quote}{c}{quote}" if c in self.computed else f"{quote}{c}{quote}"
            for c in self.columns
        )
        return f"select {select or 'true as counted'} from {self.rows_from or self.name}"

    def expectations(self, gxe, facts: Facts) -> list:
        expectations = [gxe.ExpectColumnValuesToNotBeNull(column=c) for c in self.not_null]
        for key in self.unique:
            expectations.append(
                gxe.ExpectColumnValuesToBeUnique(column=key[0])
                if len(key) == 1
                else gxe.ExpectCompoundColumnsToBeUnique(column_list=list(key), ignore_row_if="any_value_is_missing")
            )
        expectations += [
            gxe.ExpectColumnValuesToBeBetween(column=c, min_value=lo, max_value=hi)
            for c, (lo, hi) in self.between.items()
        ]
        expectations += [gxe.ExpectColumnValuesToBeInSet(column=c, value_set=list(v)) for c, v in self.in_set.items()]
        expectations += [gxe.ExpectColumnValuesToMatchRegex(column=c, regex=r) for c, r in self.regex.items()]
        if self.row_count:
            low, high = self.row_count(facts)
            expectations.append(
                gxe.ExpectTableRowCountToEqual(value=low)
                if low == high
                else gxe.ExpectTableRowCountToBeBetween(min_value=low, max_value=high)
            )
        return expectations


_COUNTS_OF_RECORDS = """
    select
        count(*) filter (where record_no is not null) as paragraphs_read,
        count(*) filter (where reject_reason is null) as accepted_records,
        count(*) filter (where reject_reason is not null and record_no is not null) as rejected_paragraphs
    from raw.source_records
"""

_COUNTS_OF_MERGES = """
    select
        (select count(*) from raw.source_records where reject_reason is null) as accepted_records,
        (select count(*) from marts.papers) as papers
"""


_COUNTS_OF_PAPERS = "select count(*) as papers from raw.paper_assignments where match_kind = 'canonical'"

_MATCH_KINDS = ("canonical", "exact", "near")

SUITES: tuple[Suite, ...] = (
    Suite(
        "raw.source_records",
        not_null=("source_file",),
        unique=(("source_file", "record_no"),),
        between={"record_no": (1, None)},
        regex={"file_sha256": r"^[0-9a-f]{64}$"},
        # Every accepted paragraph carries the text matching needs.
        in_set={"has_normalized_text": (True,)},
        computed={"has_normalized_text": "reject_reason is not null or length(normalized_text) > 0"},
    ),
    Suite(
        "raw.paper_assignments",
        not_null=("source_file", "record_no", "paper_id", "match_kind", "similarity"),
        unique=(("source_file", "record_no"),),
        between={"similarity": (0, 1)},
        in_set={"match_kind": _MATCH_KINDS},
        regex={"paper_id": r"^p_[0-9a-f]{16}$", "text_hash": r"^[0-9a-f]{64}$"},
        # Dedup loses no record: one assignment per accepted record.
        facts_sql=_COUNTS_OF_RECORDS,
        row_count=lambda facts: (facts["accepted_records"], facts["accepted_records"]),
    ),
    Suite(
        "raw.terms",
        not_null=("term", "kind", "doc_freq", "idf"),
        unique=(("term",),),
        between={"n_words": (1, 4), "doc_freq": (1, None), "idf": (1, None)},
        in_set={"kind": TERM_KINDS},
    ),
    Suite(
        "raw.paper_terms",
        not_null=("paper_id", "term", "weight", "rank"),
        unique=(("paper_id", "term"), ("paper_id", "rank")),
        between={"occurrences": (1, None), "weight": (0, 1.000001), "rank": (1, None)},
        parts_by="paper_id",
    ),
    Suite(
        "raw.paper_keyphrases",
        not_null=("paper_id", "rank", "keyphrase", "score"),
        unique=(("paper_id", "rank"), ("paper_id", "keyphrase")),
        between={"rank": (1, KEYPHRASES_PER_PAPER)},
        parts_by="paper_id",
    ),
    Suite(
        "raw.term_aliases",
        not_null=("alias", "term", "alias_kind"),
        unique=(("alias", "term"),),
        in_set={"alias_kind": ALIAS_KINDS},
    ),
    Suite(
        "raw.keyword_terms",
        not_null=("keyword_key", "term", "kind", "n_words"),
        unique=(("keyword_key",),),
        between={"n_words": (1, None)},
        # A keyword joins a mined term (its kind) or is a term of its own, kind keyword, matched by nothing.
        in_set={"kind": (*TERM_KINDS, KEYWORD_KIND), "matched_by": MATCHES, "is_own_term": (True,)},
        computed={"is_own_term": "(kind = 'keyword') = (matched_by is null)"},
    ),
    Suite(
        "raw.paper_names",
        not_null=("paper_id",),
        unique=(("paper_id",),),
        # One row per paper: every canonical record.
        facts_sql=_COUNTS_OF_PAPERS,
        row_count=lambda facts: (facts["papers"], facts["papers"]),
    ),
    Suite(
        "raw.topics",
        not_null=("topic_id", "level", "label", "n_papers"),
        unique=(("topic_id",),),
        between={"n_papers": (0, None), "coherence": (-1, 1)},
        in_set={"level": (1, 2)},
    ),
    Suite(
        "raw.topic_id_registry",
        not_null=("topic_id", "event", "level", "generation", "recorded_at"),
        unique=(("topic_id", "event"),),
        between={"generation": (1, None), "topic_id": (1, None)},
        in_set={"event": TOPIC_ID_EVENTS, "level": (1, 2)},
        # Every topic of this run holds an id the registry gave out (the registry only grows).
        facts_sql="select count(*) as topics from raw.topics",
        row_count=lambda facts: (facts["topics"], None),
    ),
    Suite(
        "raw.similar_papers",
        not_null=("paper_id", "similar_paper_id", "score", "rank"),
        unique=(("paper_id", "similar_paper_id"), ("paper_id", "rank")),
        between={"rank": (1, 5), "score": (-1.0001, 1.0001)},
        in_set={"is_self": (False,)},
        computed={"is_self": "paper_id = similar_paper_id"},
    ),
    Suite(
        "raw.paper_id_registry",
        not_null=("text_hash", "paper_id", "generation", "first_seen_at"),
        unique=(("text_hash",),),
        between={"generation": (1, None)},
        regex={"paper_id": r"^p_[0-9a-f]{16}$", "text_hash": r"^[0-9a-f]{64}$"},
        # Every text of this run's papers is registered (the registry only grows).
        facts_sql="select count(distinct text_hash) as current_texts from raw.paper_assignments",
        row_count=lambda facts: (facts["current_texts"], None),
    ),
    Suite(
        "raw.topic_paper_weights",
        not_null=("paper_id", "topic_id", "weight", "is_primary"),
        unique=(("paper_id", "topic_id"),),
        between={"weight": (0, 1)},
    ),
    Suite(
        "raw.topic_term_weights",
        not_null=("topic_id", "term", "weight"),
        unique=(("topic_id", "term"),),
        between={"weight": (0, None)},
    ),
    Suite(
        "marts.papers",
        between={"n_sources": (1, None)},
        # Dedup only merges: never more papers than accepted records.
        facts_sql=_COUNTS_OF_RECORDS,
        row_count=lambda facts: (0, facts["accepted_records"]),
    ),
    Suite(
        "marts.paper_sources",
        between={"similarity": (0, 1)},
        # Accepted + rejected = paragraphs read: nothing is lost silently.
        facts_sql=_COUNTS_OF_RECORDS,
        row_count=lambda facts: (facts["paragraphs_read"] - facts["rejected_paragraphs"],) * 2,
    ),
    Suite("marts.rejected_records"),
    Suite(
        "marts.duplicate_groups",
        between={"similarity": (0, 1)},
        # Every merged record is listed: accepted records minus one canonical record per paper.
        facts_sql=_COUNTS_OF_MERGES,
        row_count=lambda facts: (facts["accepted_records"] - facts["papers"],) * 2,
    ),
    Suite(
        "marts.paper_keywords",
        between={"keyword_no": (1, None)},
        # Every author keyword of every accepted record is listed, once. DuckDB's array_length: Spark has
        # no function of that name or any other that DuckDB shares, so its validation defines it.
        facts_sql=(
            "select cast(coalesce(sum(array_length(keywords)), 0) as bigint) as keywords"
            " from raw.source_records where reject_reason is null"
        ),
        row_count=lambda facts: (facts["keywords"],) * 2,
    ),
    Suite("marts.terms", between={"doc_freq": (1, None)}),
    Suite("marts.term_aliases"),
    Suite("marts.similar_papers", between={"rank": (1, 5)}),
    Suite("marts.paper_terms", between={"weight": (0, 1.000001), "rank": (1, None)}),
    Suite("marts.paper_keyphrases", between={"rank": (1, KEYPHRASES_PER_PAPER)}),
    Suite("marts.topics", between={"n_papers": (0, None)}),
    Suite(
        "marts.paper_topics",
        # Every paper has exactly one primary topic; a paper with no topic row at all counts 0. A left
        # join, not a union with the papers that have none: DuckDB 1.5 hangs on that union at 10^6 papers.
        between={"weight": (0, 1), "primary_topics_of_paper": (1, 1)},
        computed={"primary_topics_of_paper": "count(*) filter (where is_primary) over (partition by paper_id)"},
        rows_from="marts.papers left join marts.paper_topics using (paper_id)",
    ),
    Suite(
        "marts.paper_subtopics",
        # Every paper has exactly one primary subtopic, as it has one primary topic.
        between={"weight": (0, 1), "primary_subtopics_of_paper": (1, 1)},
        computed={"primary_subtopics_of_paper": "count(*) filter (where is_primary) over (partition by paper_id)"},
        rows_from="marts.papers left join marts.paper_subtopics using (paper_id)",
    ),
    Suite("marts.paper_id_aliases", regex={"alias_id": r"^p_[0-9a-f]{16}$"}),
    Suite("marts.topic_terms"),
    Suite("marts.subtopic_terms", between={"rank": (1, None)}),
    Suite("marts.topic_id_aliases", in_set={"level": (1, 2)}),
    Suite("marts.venue_summary", between={"papers": (0, None), "share_of_papers": (0, 1)}),
    Suite(
        "marts.topic_summary",
        between={"papers": (0, None), "share_of_list": (0, 1)},
        # One row per topic and list.
        facts_sql=(
            "select (select count(*) from marts.topics)"
            " * (select count(*) from (select distinct venue, year from marts.papers)) as rows"
        ),
        row_count=lambda facts: (facts["rows"], facts["rows"]),
    ),
    Suite("marts.term_summary", between={"papers": (1, None), "share_of_list": (0, 1)}),
    Suite(
        "marts.topic_trends",
        between={"papers": (0, None), "share_of_list": (0, 1), "share_change": (-1, 1)},
        # One row per topic and list with a year.
        facts_sql=(
            "select (select count(*) from marts.topics)"
            " * (select count(*) from (select distinct venue, year from marts.papers where year is not null)) as rows"
        ),
        row_count=lambda facts: (facts["rows"], facts["rows"]),
    ),
    Suite(
        "marts.term_trends",
        between={"papers": (0, None), "share_of_list": (0, 1), "share_change": (-1, 1)},
        # A row for each use of a term in a list with a year (term_summary's rows), and at most one more
        # for each, in the venue's next list.
        facts_sql="select count(*) as uses from marts.term_summary where year is not null",
        row_count=lambda facts: (facts["uses"], 2 * facts["uses"]),
    ),
    # A list testing one term asks the least z of a rise: sqrt(2 ln(1 / 0.05)) (docs/trends.md).
    Suite(
        "marts.emerging_terms",
        between={"rank": (1, None), "share_change": (0, 1), "growth_z": (math.sqrt(2 * math.log(1 / 0.05)), None)},
    ),
    Suite(
        "raw.check_evaluations",
        not_null=("run_id", "evaluated_at", "asset", "check_name", "passed", "severity"),
        unique=(("run_id", "asset", "check_name"),),
        in_set={"severity": ("ERROR", "WARN")},
    ),
    Suite(
        "marts.quality_runs",
        # The whole history: every row of raw.check_evaluations.
        facts_sql="select count(*) as evaluations from raw.check_evaluations",
        row_count=lambda facts: (facts["evaluations"], facts["evaluations"]),
    ),
)
SUITES_BY_NAME = {suite.name: suite for suite in SUITES}
