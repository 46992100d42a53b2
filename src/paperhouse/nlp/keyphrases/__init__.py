"""Keyphrases: each paper's ten phrases a reader would tag it with (``ranking``), optionally
re-ranked by sentence embeddings and noun phrases (``embeddings``, ``noun_phrases``)."""
