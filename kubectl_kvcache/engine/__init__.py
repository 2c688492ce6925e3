"""The engine model: what a vLLM or SGLang release does with a container's argv.

The one face the rest of the plugin imports. `predict` answers for a container (the dtype its
engine runs with, or why it dies, or why that cannot be known); `profile` is one release's
knowledge (accepted values, `--kv*` options, parser features); `accepted_since` the first release
from which a value is accepted; `add_releases` checks and merges releases added from files;
`parse` replays that release's parser on tokens; `program_refusal` is what the operator's
injection webhook cannot append to.
Pure: imports nothing outside this package, reads no files and no cluster.

Inside: data (the releases' facts), releases (versions, profiles, images, added releases),
releasefile (the files of added releases: checked, merged), argv (Kubernetes command/args and
$(VAR)), launch (wrappers and entry points), shell (sh -c), kvparse (the argparse replay),
predict, attention (vLLM's attention-backend check after the parse: `after_parse`, `starts`; on
the Node's GPU: `start_check(..., gpu=)`), gpu (the Node's GPU from its labels: `gpu_from_labels`),
webhook, words (what a running engine reports it runs with), crash (why a crashed one died, and
whether its KV-cache dtype is to blame), capacity (how many tokens its KV cache holds, in its
own words), reprs (its reports' structures read back
exactly: reprs, format-string lines, label sets), knowledge
(the JSON files of facts read from the released wheels; `load_knowledge` parses one ahead of use).
"""

from kubectl_kvcache.engine.argv import Token
from kubectl_kvcache.engine.attention import after_parse, refuses, starts
from kubectl_kvcache.engine.attention import REFUSED as START_REFUSED, UNDECIDED as START_UNDECIDED
from kubectl_kvcache.engine.attention import check as start_check, depends_on_gpu, forced_backend, gpu_facts
from kubectl_kvcache.engine.gpu import Gpu, from_labels as gpu_from_labels
from kubectl_kvcache.engine.cause import CAUSES, Cause
from kubectl_kvcache.engine.data import SAME_FORMAT
from kubectl_kvcache.engine.kvparse import AMBIGUOUS, OK, REJECTED, START_UP as START_UP_CHECK, UNKNOWN, Parse, parse
from kubectl_kvcache.engine.predict import CachedPredict, Prediction, across, predict
from kubectl_kvcache.engine.releases import (DISPLAY_NAMES, DTYPE_OPTION, ENGINES, IMAGE_TAG, MINIMUM,
                                             POD_IMAGE, SPEC_IMAGE, SPEC_VERSION, Profile, Version, accepted_since,
                                             is_ascend_image, known_releases, minimum_version, normalise_engine,
                                             parse_version, profile, release_name)
from kubectl_kvcache.engine.knowledge import load as load_knowledge
from kubectl_kvcache.engine.images import ImageRead, read as read_image, resolve_versions
from kubectl_kvcache.engine.releases import ROLE_IMAGE, UNREAD, all_releases, releases_before
from kubectl_kvcache.engine.releasefile import EngineDataError, add_releases
from kubectl_kvcache.engine.webhook import launch_refusal, program_refusal
from kubectl_kvcache.engine.crash import DTYPE as CRASH_DTYPE, NOT_DTYPE as CRASH_NOT_DTYPE, ExitCause, exit_cause
from kubectl_kvcache.engine.words import Observed, observe as observe_words, writes as reports_written
from kubectl_kvcache.engine.words import combine, keeps as keeps_line, listen_port, reports
from kubectl_kvcache.engine.capacity import Capacity, combine as combine_capacity, formats as capacity_formats
from kubectl_kvcache.engine.capacity import keeps as keeps_capacity, reports as capacity_reports
from kubectl_kvcache.engine.kvbytes import AUTO_MAX_LEN, MAX_LEN_OPTION, argv_max_len, describe as describe_bytes
from kubectl_kvcache.engine.kvbytes import element_bytes, ratio as bytes_ratio

__all__ = ["AMBIGUOUS", "CAUSES", "CachedPredict", "Cause", "DISPLAY_NAMES", "DTYPE_OPTION", "ENGINES",
           "EngineDataError", "IMAGE_TAG", "accepted_since", "add_releases", "known_releases",
           "MINIMUM", "OK", "POD_IMAGE", "Parse", "Prediction", "Profile", "REJECTED", "SAME_FORMAT",
           "SPEC_IMAGE", "SPEC_VERSION", "Token", "UNKNOWN", "Version", "is_ascend_image", "minimum_version",
           "normalise_engine", "parse", "parse_version", "predict", "profile", "program_refusal", "launch_refusal",
           "release_name", "resolve_versions", "ImageRead", "read_image", "ROLE_IMAGE", "UNREAD", "all_releases",
           "releases_before", "across",
           "CRASH_DTYPE", "CRASH_NOT_DTYPE",
           "ExitCause", "Observed", "exit_cause", "observe_words", "reports_written", "combine", "keeps_line",
           "listen_port", "reports", "after_parse", "refuses", "starts",
           "START_UP_CHECK", "load_knowledge",
           "Capacity", "combine_capacity", "capacity_formats", "keeps_capacity", "capacity_reports",
           "AUTO_MAX_LEN", "MAX_LEN_OPTION", "argv_max_len", "describe_bytes", "element_bytes", "bytes_ratio",
           "START_REFUSED", "START_UNDECIDED", "start_check", "depends_on_gpu",
           "forced_backend", "gpu_facts", "Gpu", "gpu_from_labels"]
