# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure reading of pod JSON: image references, containers and their statuses, completion
predicates and failure detection. No I/O here."""

import functools
import re
from collections import namedtuple

# --------------------------------------------------------------------------- image references
# The distribution reference grammar (what the kubelet parses; a miss is InvalidImageName):
#   reference := name [ ":" tag ] [ "@" digest ];  name := [domain "/"] path-component ["/" path-component]*

_ALNUM = r'[a-z0-9]+'
_SEPARATOR = r'(?:[._]|__|[-]+)'
_PATH_COMPONENT = _ALNUM + r'(?:' + _SEPARATOR + _ALNUM + r')*'
_DOMAIN_COMPONENT = r'(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])'
_HOST = r'(?:' + _DOMAIN_COMPONENT + r'(?:\.' + _DOMAIN_COMPONENT + r')*|\[[a-fA-F0-9:]+\])'
_DOMAIN = _HOST + r'(?::[0-9]+)?'
_NAME = r'(?:' + _DOMAIN + r'/)?' + _PATH_COMPONENT + r'(?:/' + _PATH_COMPONENT + r')*'
_TAG = r'[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}'
_DIGEST = r'[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}'
REFERENCE_RE = re.compile(r'^(' + _NAME + r')(?::(' + _TAG + r'))?(?:@(' + _DIGEST + r'))?\Z')
_IDENTIFIER_RE = re.compile(r'^[a-f0-9]{64}\Z')
_DIGEST_LENGTHS = {'sha256': 64, 'sha384': 96, 'sha512': 128}
NAME_MAX_LENGTH = 255
DEFAULT_DOMAIN = 'docker.io'
LEGACY_DEFAULT_DOMAIN = 'index.docker.io'
OFFICIAL_PREFIX = 'library/'


class ImageReference(namedtuple('ImageReference', 'domain path tag digest')):
    """A parsed image reference; str() is the fully qualified form (docker.io/library/x:latest)."""

    __slots__ = ()

    def __str__(self):
        text = '%s/%s' % (self.domain, self.path)
        tag = self.tag or (None if self.digest else 'latest')
        if tag:
            text += ':' + tag
        if self.digest:
            text += '@' + self.digest
        return text


def _split_domain(name):
    head, sep, rest = name.partition('/')
    if not sep or ('.' not in head and ':' not in head and head != 'localhost' and head.lower() == head):
        domain, remainder = DEFAULT_DOMAIN, name
    else:
        domain, remainder = head, rest
    if domain == LEGACY_DEFAULT_DOMAIN:
        domain = DEFAULT_DOMAIN
    if domain == DEFAULT_DOMAIN and '/' not in remainder:
        remainder = OFFICIAL_PREFIX + remainder
    return domain, remainder


def parse_image(reference):
    """Parse and validate an image reference; raise ValueError with the reason."""
    if not isinstance(reference, str) or not reference:
        raise ValueError('an image reference must be a non-empty string')
    parsed, reason = _parsed(reference)
    if reason:
        raise ValueError(reason)
    return parsed


@functools.lru_cache(maxsize=512)
def _parsed(reference):
    """(ImageReference, None) or (None, why it is invalid): a rollout compares the same few references for
    every pod, many times over, so each is parsed once (the result is immutable)."""
    if _IDENTIFIER_RE.match(reference):
        return None, '%s: a bare 64-character hex identifier is not a repository name' % reference
    name = reference.split('@', 1)[0]
    if name.rfind(':') > name.rfind('/'):
        name = name[:name.rfind(':')]
    if _split_domain(name)[1].lower() != _split_domain(name)[1]:
        return None, '%s: repository name must be lowercase' % reference
    match = REFERENCE_RE.match(reference)
    if not match:
        return None, '%s: invalid reference format' % reference
    name, tag, digest = match.groups()
    if len(name) > NAME_MAX_LENGTH:
        return None, '%s: repository name longer than %d characters' % (reference, NAME_MAX_LENGTH)
    domain, path = _split_domain(name)
    if digest:
        algorithm, _sep, encoded = digest.partition(':')
        if algorithm not in _DIGEST_LENGTHS:
            return None, '%s: unsupported digest algorithm %s' % (reference, algorithm)
        if len(encoded) != _DIGEST_LENGTHS[algorithm] or encoded.lower() != encoded:
            return None, '%s: invalid %s digest' % (reference, algorithm)
    return ImageReference(domain, path, tag, digest), None


def image_error(reference):
    """The reason a reference is invalid, or None."""
    try:
        parse_image(reference)
    except ValueError as exc:
        return str(exc)
    return None


def normalize_image(reference):
    """Fully qualified form of a reference; an unparsable one is returned unchanged."""
    if not isinstance(reference, str) or not reference:
        return reference
    return _normalized(reference)


@functools.lru_cache(maxsize=512)
def _normalized(reference):
    parsed, _reason = _parsed(reference)
    return reference if parsed is None else str(parsed)


def same_image(first, second):
    """True when two references name the same image once normalised (nginx == docker.io/library/nginx:latest)."""
    return normalize_image(first) == normalize_image(second)


def pinned_digest(reference):
    """The digest a reference pins (sha256:...), or None."""
    try:
        return parse_image(reference).digest
    except ValueError:
        return None


# --------------------------------------------------------------------------- containers

CONTAINER, SIDECAR, INIT = 'container', 'sidecar', 'init'
ContainerInfo = namedtuple('ContainerInfo', 'name kind index spec status')
"""kind: container | sidecar (initContainer with restartPolicy Always) | init (plain init container).
index: position in spec.containers or spec.initContainers. status: its containerStatuses entry or {}."""


def _statuses(pod, field):
    return {s.get('name'): s for s in (pod.get('status') or {}).get(field) or []}


# (spec field, status field) of the init containers, then of the containers: the order containers() lists them in
_FIELDS = (('initContainers', 'initContainerStatuses'), ('containers', 'containerStatuses'))


def _kind(field, item):
    if field == 'containers':
        return CONTAINER
    return SIDECAR if item.get('restartPolicy') == 'Always' else INIT


def containers(pod):
    """Every container and init container of the pod, as ContainerInfo, in spec order."""
    spec = pod.get('spec') or {}
    result = []
    for field, status_field in _FIELDS:
        statuses = _statuses(pod, status_field)
        for index, item in enumerate(spec.get(field) or []):
            result.append(ContainerInfo(item['name'], _kind(field, item), index, item, statuses.get(item['name'], {})))
    return result


def find_container(pod, name):
    """ContainerInfo of the named container or init container, or None (as ``containers`` would list it,
    without building the others: the completion checks ask for one container of a pod many times)."""
    spec = pod.get('spec') or {}
    for field, status_field in _FIELDS:
        for index, item in enumerate(spec.get(field) or []):
            if item['name'] == name:
                found = next((s for s in (pod.get('status') or {}).get(status_field) or [] if s.get('name') == name),
                             {})
                return ContainerInfo(name, _kind(field, item), index, item, found)
    return None


def container_status(pod, name):
    """The status of a container of the pod ({} when the pod or the status is unknown)."""
    info = find_container(pod, name) if pod else None
    return info.status if info else {}


def container_names(pod):
    return [info.name for info in containers(pod)]


def spec_path(info):
    """JSON pointer of a container in the pod (for patches)."""
    return '/spec/%s/%d' % ('containers' if info.kind == CONTAINER else 'initContainers', info.index)


# --------------------------------------------------------------------------- pod facts

def meta(pod, key, default=None):
    return (pod.get('metadata') or {}).get(key, default)


def is_terminating(pod):
    return bool(meta(pod, 'deletionTimestamp'))


def phase(pod):
    return (pod.get('status') or {}).get('phase')


def condition(pod, condition_type):
    """The pod condition of that type (dict) or None."""
    for item in (pod.get('status') or {}).get('conditions') or []:
        if item.get('type') == condition_type:
            return item
    return None


def condition_is(pod, condition_type, value):
    item = condition(pod, condition_type)
    return item is not None and item.get('status') == value


def is_ready(pod):
    return condition_is(pod, 'Ready', 'True')


def containers_healthy(pod):
    """Every regular container and sidecar is running and ready (the readiness gate left aside)."""
    infos = [i for i in containers(pod) if i.kind != INIT]
    return phase(pod) == 'Running' and not is_terminating(pod) and all(
        i.status.get('ready') and 'running' in (i.status.get('state') or {}) for i in infos)


def kubelet_saw_generation(pod, generation):
    """True if the kubelet reports having seen this spec generation (status.observedGeneration, 1.34+);
    None when the server does not report it."""
    observed = (pod.get('status') or {}).get('observedGeneration')
    if observed is None or generation is None:
        return None
    return int(observed) >= int(generation)


def pod_summary(pod):
    """Identity fields reported for every pod."""
    return {
        'name': meta(pod, 'name'),
        'namespace': meta(pod, 'namespace'),
        'uid': meta(pod, 'uid'),
        'node': (pod.get('spec') or {}).get('nodeName'),
        'pod_ip': (pod.get('status') or {}).get('podIP'),
    }


# --------------------------------------------------------------------------- completion and failure

FAILURE_REASONS = frozenset([
    'ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'CrashLoopBackOff',
    'CreateContainerError', 'CreateContainerConfigError', 'RunContainerError',
    'ErrImageNeverPull', 'PreCreateHookError', 'PreStartHookError', 'PostStartHookError',
])

# Waiting reasons about fetching an image: their message names the image they are about.
IMAGE_REASONS = frozenset(['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'ErrImageNeverPull'])


def running_image_is(status, desired):
    """The container status reports the desired image: same normalised name, or the pinned digest."""
    if not status:
        return False
    if status.get('image') and same_image(status['image'], desired):
        return True
    digest = pinned_digest(desired)
    return bool(digest and (status.get('imageID') or '').endswith(digest))


def restarted(status, old_container_id):
    """A container other than old_container_id is running."""
    if not status or not status.get('containerID'):
        return False
    return status.get('containerID') != old_container_id and 'running' in (status.get('state') or {})


def started_and_ready(status):
    if not status or not (status.get('started') and status.get('ready')):
        return False
    return 'running' in (status.get('state') or {})


def image_converged(status, desired, old_container_id=None):
    """Image update done: new containerID (when one is given), running, started, ready, desired image."""
    if old_container_id is not None and not restarted(status, old_container_id):
        return False
    return started_and_ready(status) and running_image_is(status, desired)


def left_running(status, container_id):
    """(reason, message) if the container ``container_id`` no longer runs (exited, restarted,
    waiting), else None."""
    state = (status or {}).get('state') or {}
    if status and status.get('containerID') == container_id and 'running' in state:
        return None
    for key in ('terminated', 'waiting'):
        if state.get(key):
            detail = state[key]
            message = detail.get('message') or ('exit code %s' % detail['exitCode'] if 'exitCode' in detail else '')
            return detail.get('reason') or key, message
    last = ((status or {}).get('lastState') or {}).get('terminated') or {}
    if last:
        return last.get('reason') or 'Terminated', last.get('message') or 'exit code %s' % last.get('exitCode')
    return 'Restarted', 'the container was replaced after it was verified'


def readiness_probe_text(pod, name):
    """'readinessProbe httpGet /ready on port http not passing' for a running container that is not ready,
    or '' when it has no readiness probe (then its readiness gates or startup decide)."""
    info = find_container(pod, name)
    probe = (info.spec.get('readinessProbe') or {}) if info is not None else {}
    if not probe:
        return ''
    if probe.get('httpGet'):
        get = probe['httpGet']
        handler = 'httpGet %s on port %s' % (get.get('path') or '/', get.get('port'))
    elif probe.get('tcpSocket'):
        handler = 'tcpSocket on port %s' % probe['tcpSocket'].get('port')
    elif probe.get('exec'):
        handler = 'exec %s' % ' '.join(str(part) for part in probe['exec'].get('command') or [])
    elif probe.get('grpc'):
        handler = 'grpc on port %s' % probe['grpc'].get('port')
    else:
        handler = 'probe'
    return 'readinessProbe %s not passing' % handler


def backing_off_before(status, known_ids):
    """The container waits in the kubelet's restart back-off (CrashLoopBackOff) and the container that
    last terminated is one of ``known_ids`` (from before a change): no container of the change has
    run yet, so the back-off says nothing about it. The kubelet keys its back-off by the container's
    spec hash, so a rollback to the spec a container had before can meet the back-off of that spec."""
    waiting = ((status or {}).get('state') or {}).get('waiting') or {}
    if waiting.get('reason') != 'CrashLoopBackOff':
        return False
    last = ((status or {}).get('lastState') or {}).get('terminated') or {}
    known = set(i for i in known_ids if i)
    return bool(last.get('containerID')) and last.get('containerID') in known


def exit_detail(status):
    """' (exit code N, <message or reason> )' of the container's last termination, or ''."""
    last = ((status or {}).get('lastState') or {}).get('terminated') or \
        ((status or {}).get('state') or {}).get('terminated') or {}
    if not last:
        return ''
    parts = []
    if 'exitCode' in last:
        parts.append('exit code %s' % last['exitCode'])
    text = (last.get('message') or '').strip()
    if text:
        parts.append('last log: %s' % text.splitlines()[-1][:200])
    elif last.get('reason'):
        parts.append(last['reason'])
    return ' (%s)' % ', '.join(parts) if parts else ''


def container_failure(status, restart_policy='Always'):
    """(reason, message) if the container is in a failure state, else None."""
    state = (status or {}).get('state') or {}
    waiting = state.get('waiting') or {}
    if waiting.get('reason') in FAILURE_REASONS:
        message = waiting.get('message', '')
        if waiting['reason'] == 'CrashLoopBackOff':
            message += exit_detail(status)
        return waiting['reason'], message
    terminated = state.get('terminated')
    if terminated and restart_policy == 'Never' and terminated.get('exitCode', 0) != 0:
        return terminated.get('reason') or 'Error', terminated.get('message', '') or 'exit code %s' % terminated.get('exitCode')
    return None


def pod_failure(pod):
    """(reason, message) if the pod failed as a whole (phase Failed), else None. A pod that went away or is going
    (deleted, replaced, evicted) did not fail: pods/departure.py tells that, and is asked first."""
    if pod is not None and phase(pod) == 'Failed':
        status = pod.get('status') or {}
        return status.get('reason') or 'PodFailed', status.get('message', '')
    return None
