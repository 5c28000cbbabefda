# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure: what a config rollout reads in a pod to see that the kubelet projected an object's new data into a volume,
before it restarts the containers that mount it (docs/config-rollouts.md "Volume consumers"), and what it may print
of a check command's output.

A Probe is one volume and one object of it: the files the restarted consumers read (``items`` map a key to another
file name), each with the text the object holds now, and the container whose whole mount of the volume they are read
in - a consumer itself when it mounts the volume whole, else another running container of the pod that does (a
``subPath`` mount shows one file, bound at the container's start: it never shows the new one). ``problem`` says why
no container can show them."""

import base64
import binascii
import posixpath
from collections import namedtuple

from ansible_collections.inplace.k8s.plugins.module_utils.config import usage
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate

MAX_FILES = 32            # files read per probe (the first ones by name)
MAX_BYTES = 1024 * 1024   # their expected text in all, at most (an object holds at most 1 MiB)
SHOWN = 200               # characters of a check command's output shown in a failure
MASK = '********'

# volume: the pod volume; ref: 'ConfigMap/NAME'; consumers: the restarted containers that read it through that
# volume; container, mount: where the files are read (None: nowhere, ``problem`` says why); files: ((absolute
# path, expected text), ...); left: files not read (over MAX_FILES / MAX_BYTES).
Probe = namedtuple('Probe', 'volume ref consumers container mount files left problem')


def text_of(obj, key):
    """The text of ``key`` in ``obj`` as its file holds it (a ConfigMap's data as is; binaryData and a Secret's data
    base64-decoded, read as UTF-8 as the exec stream reads the file), or None when the object has no such key."""
    if obj.get('kind') != usage.SECRET and key in (obj.get('data') or {}):
        return str(obj['data'][key])
    encoded = (obj.get('binaryData') if obj.get('kind') != usage.SECRET else obj.get('data')) or {}
    if key not in encoded:
        return None
    try:
        return base64.b64decode(str(encoded[key])).decode('utf-8', 'replace')
    except (binascii.Error, ValueError):
        return None


def _keys(obj):
    if obj.get('kind') == usage.SECRET:
        return sorted(obj.get('data') or {})
    return sorted(set(obj.get('data') or {}) | set(obj.get('binaryData') or {}))


def _whole_mount(pod, volume, prefer):
    """(container, mount path) of a running container of the pod that mounts ``volume`` whole, the containers
    ``prefer`` first; (None, None) when there is none."""
    infos = [podstate.find_container(pod, name) for name in prefer]
    infos += [info for info in podstate.containers(pod) if info.name not in prefer and info.kind != podstate.INIT]
    for info in infos:
        if info is None or 'running' not in (info.status.get('state') or {}):
            continue
        for mount in info.spec.get('volumeMounts') or []:
            if (mount or {}).get('name') == volume and not (mount.get('subPath') or mount.get('subPathExpr')) \
                    and mount.get('mountPath'):
                return info.name, mount['mountPath']
    return None, None


def _reads(pod, names, changed, objects):
    """{(volume, ref): ([consumers], keys or None)} of the volume and subPath uses of the changed objects by the
    containers ``names``."""
    uses = usage.consumers(pod.get('spec'))
    found = {}
    for name in names:
        for use in uses.get(name) or []:
            ref = usage.ref(use.kind, use.name)
            if use.how not in (usage.VOLUME, usage.SUBPATH) or ref not in (changed.get(name) or ()) \
                    or not objects.get(ref) or not use.volume:
                continue
            consumers, keys = found.get((use.volume, ref), ([], set()))
            if name not in consumers:
                consumers.append(name)
            keys = None if keys is None or use.keys is None else keys | set(use.keys)
            found[(use.volume, ref)] = (consumers, keys)
    return found


def _file_names(pod, volume, ref):
    """{key: file name} of ``ref`` in the pod volume ``volume`` (None: every key at its own name)."""
    for item in (pod.get('spec') or {}).get('volumes') or []:
        if (item or {}).get('name') != volume:
            continue
        for kind, name, files, _optional in usage.volume_files(item):
            if usage.ref(kind, name) == ref:
                return files
    return None


def probes(pod, names, changed, objects):
    """The Probes of the volumes through which the containers ``names`` of ``pod`` read objects they restart for
    (``changed``: container -> [ref], config/plan.py PodConfig.changed; ``objects``: ref -> the object now)."""
    found = []
    for (volume, ref), (consumers, keys) in sorted(_reads(pod, names, changed, objects).items()):
        obj = objects[ref]
        names_of = _file_names(pod, volume, ref)
        wanted = sorted(keys) if keys is not None else sorted(names_of) if names_of else _keys(obj)
        files, budget, left = [], MAX_BYTES, 0
        container, mount = _whole_mount(pod, volume, consumers)
        for key in wanted:
            text = text_of(obj, key)
            if text is None:
                continue   # not in the object (an optional item): nothing is projected for it
            if len(files) >= MAX_FILES or len(text) > budget:
                left += 1
                continue
            budget -= len(text)
            name = (names_of or {}).get(key, key)
            files.append((posixpath.join(mount, name) if mount else name, text))
        if not files:
            continue
        problem = None if container else (
            'no running container of the pod mounts volume %s whole (a subPath mount shows a file bound at the '
            'container\'s start, never the new one)' % volume)
        found.append(Probe(volume, ref, tuple(consumers), container, mount, tuple(files), left, problem))
    return found


def command(probe):
    """The command that reads the probe's files: ``cat`` (in every image with a shell's tools; none in distroless)."""
    return ['cat'] + [path for path, _text in probe.files]


def shows(probe, stdout):
    """Does ``stdout`` of command(probe) show the object's data now?"""
    return (stdout or '') == ''.join(text for _path, text in probe.files)


def describe(probe):
    """'ConfigMap/app-config in volume conf (/etc/app/mode, /etc/app/app.conf)'."""
    shown = ', '.join(path for path, _text in probe.files[:4]) + (', ...' if len(probe.files) > 4 else '')
    return '%s in volume %s (%s%s)' % (probe.ref, probe.volume, shown,
                                       '; %d more file(s) not read' % probe.left if probe.left else '')


def secret_values(pod, container, objects):
    """The texts a check's output must not show: every value of the Secrets the container uses that the run read;
    None when it uses a Secret the run did not read (its whole output is then masked)."""
    values = []
    for use in (usage.consumers(pod.get('spec')).get(container) or []):
        if use.kind != usage.SECRET:
            continue
        obj = objects.get(usage.ref(use.kind, use.name))
        if not obj:
            return None
        values.extend(text_of(obj, key) for key in _keys(obj))
    return [value for value in values if value and value.strip()]


def masked(text, secrets):
    """``text`` with every Secret value of ``secrets`` (secret_values) replaced by ********, all of it when
    ``secrets`` is None, at most SHOWN characters."""
    if secrets is None:
        return MASK + ' (masked: the container uses a Secret this run did not read)'
    text = text or ''
    for value in sorted(secrets, key=len, reverse=True):
        text = text.replace(value, MASK)
        if value.strip() != value:
            text = text.replace(value.strip(), MASK)
    return text if len(text) <= SHOWN else text[:SHOWN] + '...'
