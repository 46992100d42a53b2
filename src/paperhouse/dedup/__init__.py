"""Stage 2, dedup: the papers behind the records, exact then near duplicates.

Exact duplicates share a normalised text; near ones are found by MinHash/LSH (``minhash``) and
verified on their shingles (``verification``) under the rules of ``params``; ``papers`` clusters
them and ``registry`` keeps every paper's id from run to run.

Hands on: ``raw.papers`` and ``raw.paper_sources`` to the NLP stage and the models.
"""
