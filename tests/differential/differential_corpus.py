"""The differential corpus: manifests run by both engines with the same scripted pod outcomes, one module per kind
(corpus_broadcast_job.py, corpus_tf_job.py; the case record and the timed actions are in corpus_common.py)."""

from __future__ import annotations

from corpus_broadcast_job import BROADCAST_CASES
from corpus_common import Case
from corpus_tf_job import TF_CASES

CASES: list[Case] = BROADCAST_CASES + TF_CASES
