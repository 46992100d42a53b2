"""Stage 1, ingest: a folder of lists and exports read into records with provenance.

Files are decoded (``encoding``), classified (``input_files``), parsed as text lists
(``text_lists``) or tables (``table_reading``, ``row_recovery``, ``structured_inputs``), repaired
and judged (``normalize``, ``judging``) and cached by content (``parse_cache``); ``reading`` ties
them together.

Hands on: ``raw.source_records`` (accepted records) and ``raw.rejected_records`` to dedup.
"""
