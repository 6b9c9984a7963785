"""``podread.selector.job_selector``: a Job's selector, built once and kept (issue 32 item 4)."""

from __future__ import annotations

import pytest

from podread.selector import PodSelector


def test_job_selector_is_the_jobs_selector_kept_immutable() -> None:
    """``job_selector`` answers the selector a Job's pods are listed with, the same (immutable) object
    for the same Job, another for another namespace or Job; bounded (issue 32 item 4)."""
    import dataclasses

    from podread.constants import JOB_LABEL
    from podread.selector import JOB_SELECTORS_MEMO, job_selector

    kept = job_selector("team-a", "train")
    assert kept == PodSelector(namespace="team-a", labels={JOB_LABEL: "train"})
    assert kept.label_selector() == f"{JOB_LABEL}=train" and kept.namespace == "team-a"
    assert job_selector("team-a", "train") is kept
    assert job_selector("team-b", "train") == PodSelector(namespace="team-b", labels={JOB_LABEL: "train"})
    assert job_selector("team-a", "train-2").labels == {JOB_LABEL: "train-2"}
    assert job_selector("", "train").namespace == ""
    with pytest.raises(dataclasses.FrozenInstanceError):
        kept.namespace = "team-b"  # type: ignore[misc]
    with pytest.raises(TypeError):
        kept.labels[JOB_LABEL] = "other"  # type: ignore[index]
    assert job_selector.cache_info().maxsize == JOB_SELECTORS_MEMO
