# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure: which containers of a pod use which ConfigMaps and Secrets, and how (docs/config-rollouts.md).

A use is one way a container reads an object: an ``env`` variable from one key (``env[].valueFrom``
configMapKeyRef / secretKeyRef), all keys as variables (``envFrom``), or files of a volume (``configMap``,
``secret``, or a ``projected`` volume's sources) mounted at a path, whole (``volume``) or one file of it
(``subPath``, also ``subPathExpr``). Kubernetes treats them differently: env values and subPath files are fixed
when the container starts; a whole-volume mount is updated by the kubelet on its next sync of the pod.

The containers are the app containers and the sidecars (init containers with restartPolicy Always); a plain init
container ran to completion before the others started and is never restarted in place, so it is left out.
"""

from collections import namedtuple

CONFIGMAP, SECRET = 'ConfigMap', 'Secret'
KINDS = (CONFIGMAP, SECRET)
ENV, ENV_FROM, VOLUME, SUBPATH = 'env', 'envFrom', 'volume', 'subPath'
# How soon a container sees a change without a restart: never (env, envFrom, subPath), or at the kubelet's next
# sync of the pod (volume).
STATIC = (ENV, ENV_FROM, SUBPATH)

# kind, name: the object; how: ENV, ENV_FROM, VOLUME or SUBPATH; keys: the object's keys it reads (None: all of
# them); where: the variable (env), the prefix (envFrom), or the mount path (volume, subPath); optional: the
# reference is optional (the pod starts without the object); volume: the pod volume's name (volume, subPath).
Use = namedtuple('Use', 'kind name how keys where optional volume', defaults=(None, None, False, None))


def ref(kind, name):
    """'ConfigMap/app-config': how objects are named in rollout_config and in the records."""
    return '%s/%s' % (kind, name)


def describe(use):
    """One use as a person reads it: 'env APP_MODE (key mode)', 'mount /etc/app', 'subPath /etc/app.conf (key
    app.conf)'."""
    keys = ' (key%s %s)' % ('s' if len(use.keys) > 1 else '', ', '.join(use.keys)) if use.keys else ''
    if use.how == ENV:
        return 'env %s%s' % (use.where, keys)
    if use.how == ENV_FROM:
        return 'envFrom%s' % (' prefix %s' % use.where if use.where else '')
    return '%s %s%s' % ('mount' if use.how == VOLUME else 'subPath', use.where, keys)


def _env_uses(container):
    found = []
    for item in container.get('env') or []:
        source = (item or {}).get('valueFrom') or {}
        for field, kind in (('configMapKeyRef', CONFIGMAP), ('secretKeyRef', SECRET)):
            selector = source.get(field)
            if isinstance(selector, dict) and selector.get('name'):
                found.append(Use(kind, selector['name'], ENV, (str(selector.get('key')),), item.get('name'),
                                 bool(selector.get('optional'))))
    for item in container.get('envFrom') or []:
        for field, kind in (('configMapRef', CONFIGMAP), ('secretRef', SECRET)):
            selector = (item or {}).get(field)
            if isinstance(selector, dict) and selector.get('name'):
                found.append(Use(kind, selector['name'], ENV_FROM, None, item.get('prefix') or '',
                                 bool(selector.get('optional'))))
    return found


def _files(source):
    """{key: file path} of a source's ``items`` (a key projected under another name); None: every key, each at its
    own name."""
    found = dict((str(entry.get('key')), str(entry.get('path') or entry.get('key')))
                 for entry in source.get('items') or [] if isinstance(entry, dict))
    return found or None


def volume_files(volume):
    """[(kind, name, {key: file path} or None, optional)] of one pod volume: a configMap, a secret, or a projected
    volume's configMap and secret sources (its downwardAPI and serviceAccountToken sources read no object). None:
    every key of the object, each a file of its own name."""
    found = []
    config = volume.get('configMap')
    if isinstance(config, dict) and config.get('name'):
        found.append((CONFIGMAP, config['name'], _files(config), bool(config.get('optional'))))
    secret = volume.get('secret')
    if isinstance(secret, dict) and secret.get('secretName'):
        found.append((SECRET, secret['secretName'], _files(secret), bool(secret.get('optional'))))
    for source in ((volume.get('projected') or {}).get('sources') or []):
        for field, kind in (('configMap', CONFIGMAP), ('secret', SECRET)):
            item = (source or {}).get(field)
            if isinstance(item, dict) and item.get('name'):
                found.append((kind, item['name'], _files(item), bool(item.get('optional'))))
    return found


def volume_sources(volume):
    """[(kind, name, keys or None, optional)] of one pod volume (volume_files without the file names)."""
    return [(kind, name, tuple(files) if files else None, optional)
            for kind, name, files, optional in volume_files(volume)]


def _subpath_keys(keys, sub_path, single):
    """The keys a subPath mount reads: the file it names, when that is a key - a volume with one source and no
    items, a plain subPath. Otherwise (items rename files, several sources share the volume, subPathExpr) every
    key the volume projects counts: that over-counts and never misses a change."""
    if keys is not None or not single or '$(' in sub_path:
        return keys
    return (sub_path.split('/')[0],)


def _mount_uses(container, volumes):
    found = []
    for mount in container.get('volumeMounts') or []:
        sources = volumes.get((mount or {}).get('name'))
        if not sources:
            continue
        sub_path = mount.get('subPath') or mount.get('subPathExpr')
        for kind, name, keys, optional in sources:
            how, where = SUBPATH if sub_path else VOLUME, mount.get('mountPath')
            keys = _subpath_keys(keys, sub_path, len(sources) == 1) if sub_path else keys
            found.append(Use(kind, name, how, keys, where, optional, mount.get('name')))
    return found


def consumers(spec):
    """{container name: [Use]} of a pod spec (or a pod template's spec), the app containers and the sidecars,
    in spec order; containers that use nothing are left out."""
    spec = spec or {}
    volumes = {}
    for volume in spec.get('volumes') or []:
        if isinstance(volume, dict) and volume.get('name'):
            volumes[volume['name']] = volume_sources(volume)
    result = {}
    containers = [c for c in spec.get('initContainers') or [] if (c or {}).get('restartPolicy') == 'Always']
    for container in containers + list(spec.get('containers') or []):
        uses = _env_uses(container) + _mount_uses(container, volumes)
        if uses:
            result[container.get('name')] = uses
    return result


def objects(spec):
    """The objects a pod spec's containers use: sorted [(kind, name)]."""
    return sorted(set((use.kind, use.name) for uses in consumers(spec).values() for use in uses))


def keys_used(uses, kind, name):
    """The keys of one object that ``uses`` (one container's) read: a sorted tuple, or None for all of them."""
    keys = set()
    for use in uses:
        if (use.kind, use.name) != (kind, name):
            continue
        if use.keys is None:
            return None
        keys.update(use.keys)
    return tuple(sorted(keys))


AUTO = 'auto'
_NAME_CHARS = set('abcdefghijklmnopqrstuvwxyz0123456789-.')


def scope_errors(entries, field='rollout_config'):
    """The mistakes in a rollout_config value (``auto``, or a list of ``ConfigMap/name`` and ``Secret/name``),
    each naming ``field``, the entry and the fix; [] when there is none."""
    entries = [entries] if isinstance(entries, str) else list(entries or [])
    errors = []
    if AUTO in entries and len(entries) > 1:
        errors.append('%s: auto stands alone (every object the pods use), or give a list of ConfigMap/NAME and '
                      'Secret/NAME without it' % field)
    for index, entry in enumerate(entries):
        if entry == AUTO:
            continue
        hint = entry_error(entry)
        if hint:
            errors.append('%s[%d] %r: %s' % (field, index, str(entry)[:100], hint))
    return errors


def entry_error(entry):
    """What is wrong with one ``ConfigMap/NAME`` or ``Secret/NAME`` entry, and its fix; None when it is right."""
    kind, _sep, name = str(entry).partition('/')
    fixed = next((k for k in KINDS if k.lower() == kind.lower()), None)
    if kind not in KINDS:
        return 'write %s/%s (the kind as Kubernetes spells it)' % (fixed, name) if fixed and name else \
            'give ConfigMap/NAME or Secret/NAME (for example ConfigMap/app-config)%s' % (
                '' if entry == AUTO else ', or auto')
    if not name or len(name) > 253 or not set(name) <= _NAME_CHARS or not name[0].isalnum() \
            or not name[-1].isalnum():
        return '%r is not an object name (lowercase letters, digits, - and ., at most 253)' % name[:100]
    return None


def scope(entries):
    """The refs a valid rollout_config names, or None for auto (scope_errors first)."""
    entries = [entries] if isinstance(entries, str) else list(entries or [])
    return None if entries == [AUTO] else frozenset(str(e) for e in entries)
