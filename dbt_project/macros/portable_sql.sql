{#- SQL that DuckDB and Spark spell differently, one macro per construct: the models stay one set
    for both targets (docs/scale-out.md §3.6). Each `default__` is DuckDB's spelling, so the DuckDB
    build renders the SQL it always did; `spark__` is dbt-spark's. dbt_project.yml's `dispatch`
    puts this project first, so spark__listagg below replaces dbt-spark's. -#}

{#- A term's id: the same lower-hex MD5 prefix on every engine, so term_ids match across them. -#}
{% macro term_id(term) -%}
    'term_' || substr({{ dbt.hash(term) }}, 1, 12)
{%- endmacro %}

{#- Words in a text whose words ingest left separated by single spaces (clean_text). -#}
{% macro word_count(text) -%}
    {{ return(adapter.dispatch('word_count', 'paperhouse')(text)) }}
{%- endmacro %}

{% macro default__word_count(text) -%}
    len(string_split({{ text }}, ' '))
{%- endmacro %}

{#- size() of a null array is -1 on Spark (dbt-spark turns ANSI mode off): null, as on DuckDB. -#}
{% macro spark__word_count(text) -%}
    case when {{ text }} is not null then size(split({{ text }}, ' ')) end
{%- endmacro %}

{#- Every match of `pattern` (a regular expression, given as the Jinja string it should be in SQL)
    replaced. Spark reads backslashes in string literals as escapes, so its literal doubles them. -#}
{% macro regexp_replace_all(text, pattern, replacement) -%}
    {{ return(adapter.dispatch('regexp_replace_all', 'paperhouse')(text, pattern, replacement)) }}
{%- endmacro %}

{% macro default__regexp_replace_all(text, pattern, replacement) -%}
    regexp_replace({{ text }}, '{{ pattern }}', '{{ replacement }}', 'g')
{%- endmacro %}

{% macro spark__regexp_replace_all(text, pattern, replacement) -%}
    regexp_replace({{ text }}, '{{ pattern | replace("\\", "\\\\") }}', '{{ replacement }}')
{%- endmacro %}

{#- Whether `pattern` matches anywhere in the text (not the whole text). -#}
{% macro regexp_contains(text, pattern) -%}
    {{ return(adapter.dispatch('regexp_contains', 'paperhouse')(text, pattern)) }}
{%- endmacro %}

{% macro default__regexp_contains(text, pattern) -%}
    regexp_matches({{ text }}, '{{ pattern }}')
{%- endmacro %}

{% macro spark__regexp_contains(text, pattern) -%}
    regexp_like({{ text }}, '{{ pattern | replace("\\", "\\\\") }}')
{%- endmacro %}

{#- An aggregate: `value` of the group's first row ordered by the `order_by` expressions (ascending;
    negate a number to sort it descending). The order must single out one row: ties have no first. -#}
{% macro first_in_order(value, order_by) -%}
    {{ return(adapter.dispatch('first_in_order', 'paperhouse')(value, order_by)) }}
{%- endmacro %}

{% macro default__first_in_order(value, order_by) -%}
    first({{ value }} order by {{ order_by | join(', ') }})
{%- endmacro %}

{% macro spark__first_in_order(value, order_by) -%}
    min_by({{ value }}, struct({{ order_by | join(', ') }}))
{%- endmacro %}

{#- Select-list items: one row per element of an array column, named `element`, and its 1-based
    position, named `position`. Rows whose array is empty or null yield none. -#}
{% macro unnest_with_position(array, element, position) -%}
    {{ return(adapter.dispatch('unnest_with_position', 'paperhouse')(array, element, position)) }}
{%- endmacro %}

{% macro default__unnest_with_position(array, element, position) -%}
    unnest({{ array }}) as {{ element }},
    generate_subscripts({{ array }}, 1) as {{ position }}
{%- endmacro %}

{% macro spark__unnest_with_position(array, element, position) -%}
    inline(transform({{ array }}, (item, index) -> named_struct('{{ element }}', item, '{{ position }}', index + 1)))
{%- endmacro %}

{#- One integer per row from several columns of any type: grain tests group by it before the key. -#}
{% macro key_hash(columns) -%}
    {{ return(adapter.dispatch('key_hash', 'paperhouse')(columns)) }}
{%- endmacro %}

{% macro default__key_hash(columns) -%}
    hash({{ columns | join(', ') }})
{%- endmacro %}

{#- dbt-spark's own listagg drops the order (with a warning); Spark 4's listagg keeps it. -#}
{% macro spark__listagg(measure, delimiter_text, order_by_clause, limit_num) -%}
    {%- if limit_num -%}
        {{ exceptions.raise_compiler_error("listagg: limit_num is not supported on Spark here") }}
    {%- endif -%}
    listagg({{ measure }}, {{ delimiter_text }})
    {%- if order_by_clause %} within group ({{ order_by_clause }}){% endif %}
{%- endmacro %}
