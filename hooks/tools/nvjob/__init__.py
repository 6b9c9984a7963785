"""``kubectl nvjob``: a kubectl plugin that says what an NVCRE Job is doing and what it waits for.

Installed with the project (``pip install .``) as the console command ``kubectl-nvjob``, which
``kubectl`` finds on ``PATH``. Modules, one job each:

- ``client``: the cluster it reads, with the user's kubeconfig (``--kubeconfig``, ``--context``, the
  context's namespace); the Job, its JobSets and its Events through the kubernetes client, the pods
  and batch Jobs through a podread ``Reader`` on the live client (ADR-102);
- ``drain``: what the drain barrier waits for now, from ``hooks.core.barrier`` itself over that Reader;
- ``view``: pure, from objects to the facts ``get`` and ``describe`` show (rows, the spec in short, the attempts);
- ``why``: pure, the paragraph of ``why`` from the status and the barrier's view, and what moves a
  phase on from the lifecycle table (``hooks.core.lifecycle``);
- ``rendering``: those facts as kubectl-style tables and text, the cluster's text in them escaped
  (``rendering.escape``: no control character reaches the terminal), or JSON/YAML, exact;
- ``jsonpath``: kubectl's ``-o jsonpath`` templates, client-go's parser and evaluator ported;
- ``commands``: the click commands ``get`` (kubectl get's flags, ``-w`` included), ``describe``,
  ``why``, ``history``, ``summary``, and kubectl's errors and exit codes.

``plugins/krew`` packages it for krew.

Nothing here writes to the cluster.
"""
