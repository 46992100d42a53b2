"""Stage 3, NLP: what the papers are about.

``terms`` mines each paper's terms (acronyms merged, author keywords joined), ``keyphrases``
ranks its ten keyphrases, ``topics`` fits the two-level topic model and keeps topic ids stable,
``similar`` finds the most similar papers, ``names`` the method each abstract introduces;
``analysis`` runs them together on both cores.

Hands on: the ``raw`` term, keyphrase, topic, similar-paper and name tables to the dbt models.
"""
