"""The conformance suite: one test module per clause group (see ``ckptconform.clauses``).

Tests reach the implementation only through the plugin's fixtures (``target``, ``backend``,
``sandbox``, ``ledger``) and ``ckptstore.api``; helpers live in ``_driver``, ``_strategies`` and
``_layout``.
"""
