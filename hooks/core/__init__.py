"""The pure decision core: a parsed request (``observed``) and a pod reader in, a ``Decision`` out.

No module here does I/O or imports anything that does (``tests/contract/test_layout.py`` checks it, in the
source and in a fresh interpreter): pods are read only through the ``PodReads`` passed to ``decide``
(``hooks.core.podreads``; podread's Reader in production, ADR-102). The request subset and the status
are declared once (``hooks.core.request``, ``hooks.core.status``, read by ``hooks.core.declared``;
ADR-105), the words the hooks write are ``hooks.core.vocab``. The table of rows is
``hooks.core.decide``; each row's work is in ``hooks.core.rows``; the drain barrier in
``hooks.core.barrier``; the status wording in ``hooks.core.wording``.
"""
