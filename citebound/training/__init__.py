"""Lab training of the trained verifier's head (the ``[train]`` extra: pandas, scikit-learn).

:mod:`~citebound.training.head` (features and the head), :mod:`~citebound.training.evaluation` (leave-out
evaluation, the AUC comparison with embedding, the adoption rule), :mod:`~citebound.training.own`
(``citebound train`` and its model card). The study's ``train_verifier`` rule builds on these.
"""
