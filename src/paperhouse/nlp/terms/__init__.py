"""Terms: candidate phrases counted per paper (``ngram_counts``), spelling variants merged
(``words``, ``table``), acronyms defined in the texts expanded (``acronyms``,
``acronym_expansion``), weighted (``weights``); ``extraction`` runs them; ``keywords`` joins
author keywords to the mined terms."""
