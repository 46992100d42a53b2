"""Topics: a deterministic two-level NMF model (``model``, ``subtopics``), how many topics
(``sizes``), coherent and distinct top terms (``top_terms``, ``coherence``), and ids that persist
across re-fits (``ids``)."""
