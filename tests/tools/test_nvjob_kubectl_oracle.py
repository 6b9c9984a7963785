"""``kubectl nvjob get``'s ``-o jsonpath`` and ``-o json|yaml`` print what kubectl itself prints for the
same object: the real ``kubectl`` (Debian's package) is the oracle. ``kubectl label --local -f FILE
z=1 -o ...`` prints an object from a file through kubectl's own printers (client-go's JSONPath, its
JSON and YAML printers) without a server; the port (``hooks.tools.nvjob.jsonpath``) and the plugin's
printers are run on the same object, with the same label, and must print the same.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from hooks.tools.nvjob import jsonpath, rendering
from tests.tools.test_nvjob import ATTEMPTS, RUNNING, nvjob

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl (Debian's package)")

TEMPLATES = [
    "{.metadata.name}",
    "{.status.phase} {.status.attempt} {.status.activePods}",
    '{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\\n"}{end}',
    '{.status.conditions[?(@.type=="Drained")].message}',
    "{.status.conditions[?(@.status!='True')].type}",
    "{.status.attempts[*].jobSet}",
    "{.status.attempts[-1:].jobSet}",
    "{.status.attempts[0:2].exitCode}",
    "{.status.attempts[?(@.drainSeconds>100)].attempt}",
    "{.status.attempts[?(@.drainStuck)].jobSet}",
    "{.status.attempts[0]['jobSet','node']}",
    "{.metadata.labels}",
    "{.spec.replicatedJobs[*].name}",
    "{..image}",
    "{.status.missing}[{.nothing.at.all}]",
    "{.status.attempts[0].drainSeconds} {.status.attempts[0].drainStuck} {.status.lastFailure}",
    "{$.kind}/{@.metadata.namespace}",
    "{range .spec.replicatedJobs[*]}{.name}:{range .template.spec.template.spec.containers[*]}{.name},{end};{end}",
]


def job() -> dict[str, Any]:
    status = {**RUNNING, "attempt": 2, "workload": "llama-2", "attempts": ATTEMPTS,
              "lastFailure": {"attempt": 1, "cause": "default", "message": "<worker> & launcher"},
              "conditions": [{"type": "Drained", "status": "True", "reason": "NoActivePods", "message": "no pod é"},
                             {"type": "Admitted", "status": "False", "reason": "Pending", "message": "quota"}]}
    document = nvjob("llama", status=status, launcher="launcher")
    document["metadata"]["labels"] = {"team": "nlp", "kueue.x-k8s.io/queue-name": "q"}
    return document


def kubectl(tmp_path: Path, document: dict[str, Any], output: str) -> subprocess.CompletedProcess[str]:
    """kubectl's own printing of ``document`` (labelled ``z=1``, which ``--local`` needs to have a change to print)."""
    path = tmp_path / "job.json"
    path.write_text(json.dumps(document))
    config = tmp_path / "kubeconfig"  # never read from: --local sends nothing
    config.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
    return subprocess.run(["kubectl", "label", "--local", "-f", str(path), "z=1", "-o", output], capture_output=True,
                          text=True, timeout=60, check=False, env={"KUBECONFIG": str(config), "HOME": str(tmp_path)})


def labelled(document: dict[str, Any]) -> dict[str, Any]:
    metadata = {**document["metadata"], "labels": {**document["metadata"]["labels"], "z": "1"}}
    return {**document, "metadata": metadata}


@pytest.mark.parametrize("template", TEMPLATES)
def test_the_jsonpath_port_prints_what_kubectl_prints(template: str, tmp_path: Path) -> None:
    done = kubectl(tmp_path, job(), f"jsonpath={template}")
    assert done.returncode == 0, done.stderr
    assert jsonpath.execute(jsonpath.parse(template), labelled(job())) == done.stdout


def test_json_and_yaml_are_kubectls(tmp_path: Path) -> None:
    plain = job()
    plain["status"]["lastFailure"]["message"] = "worker and launcher"  # Go escapes <, >, & in JSON; the plugin not
    plain["status"]["conditions"][0]["message"] = "no pod"  # nor does it write é raw: it escapes it (terminal-safe)
    done = kubectl(tmp_path, plain, "json")
    assert done.returncode == 0, done.stderr
    assert rendering.dump_objects(labelled(plain), "json") + "\n" == done.stdout, "byte for byte"
    done = kubectl(tmp_path, job(), "yaml")
    assert yaml.safe_load(rendering.dump_objects(labelled(job()), "yaml")) == yaml.safe_load(done.stdout)
