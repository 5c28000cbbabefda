# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The config change itself (option ``config_data``, the role's ``rollout_config_data``; docs/config-rollouts.md):
the new data of the named ConfigMaps and Secrets written first, the data from before kept for a rollback.

``config_data`` maps ``ConfigMap/NAME`` or ``Secret/NAME`` to the object's new data: for a ConfigMap ``data``
and/or ``binaryData``, for a Secret ``stringData`` (plain text) and/or ``data`` (base64); each field given
replaces that field of the object whole (a key left out is removed), a field not given is left as it is.

The data from before is kept in an object of the same kind beside it, ``NAME.inplace-previous`` (a Secret's in a
Secret: it is never written where a reader of pods or workloads could see it), owned by the object (deleting the
object deletes it), its annotations naming the object, the data it was replaced by (a hash) and when. The run
names it in its result; it is deleted when the run finishes or after its data was written back by a rollback,
and kept (and named) when the run stops. A run again with the same data finds it and resumes: the object already
has the data, and the kept copy is still the data from before.

Every write is guarded by the resourceVersion read; what the API server stored is read again and is the truth."""

import base64
import binascii
import copy
import re

from ansible_collections.inplace.k8s.plugins.module_utils.config import record, usage
from ansible_collections.inplace.k8s.plugins.module_utils.connection import access, paths
from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import MERGE_PATCH
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import (
    ConflictError, NotFoundError, ValidationError,
)
from ansible_collections.inplace.k8s.plugins.module_utils.pods.record import timestamp

SUFFIX = '.inplace-previous'
PREVIOUS_OF, REPLACED_BY, WRITTEN = 'inplace.k8s/previous-of', 'inplace.k8s/replaced-by', 'inplace.k8s/written'
ROLLING_BACK = 'inplace.k8s/rolling-back'
LABEL = 'inplace.k8s/previous'
FIELDS = {usage.CONFIGMAP: ('data', 'binaryData'), usage.SECRET: ('data', 'stringData')}
RESOURCES = {usage.CONFIGMAP: 'configmaps', usage.SECRET: 'secrets'}
MASK = '********'
VERBS = ('create', 'update', 'patch', 'delete')   # the writes of config_data (rbac/: role inplace-k8s-config-data)
_KEY = re.compile(r'^[-._a-zA-Z0-9]{1,253}$')


def kept_name(name):
    return name + SUFFIX


def _entry_errors(field, ref, value):
    where = '%s[%r]' % (field, ref)
    kind = ref.partition('/')[0]
    if not isinstance(value, dict) or not value:
        return ['%s: give the new data as a mapping, for example {data: {KEY: VALUE}}, got %s' % (
            where, type(value).__name__ if value is not None else 'nothing')]
    allowed = FIELDS[kind]
    errors = ['%s: %r is not a field of a %s\'s data; give %s' % (where, str(key)[:60], kind, ' and/or '.join(allowed))
              for key in sorted(value, key=str) if key not in allowed]
    for name in allowed:
        items = value.get(name)
        if name not in value:
            continue
        if not isinstance(items, dict):
            errors.append('%s.%s: a mapping of keys to string values, got %s' % (where, name, type(items).__name__))
            continue
        for key, item in sorted(items.items(), key=lambda pair: str(pair[0])):
            if not isinstance(key, str) or not _KEY.match(key):
                errors.append('%s.%s: key %r is not a valid key (letters, digits, -, _ and ., at most 253)'
                              % (where, name, str(key)[:60]))
            elif not isinstance(item, str):
                errors.append('%s.%s.%s: the value must be a string (quote it in YAML), got %s'
                              % (where, name, key, type(item).__name__))
            elif name in ('binaryData',) or (kind == usage.SECRET and name == 'data'):
                try:
                    base64.b64decode(item, validate=True)
                except (binascii.Error, ValueError):
                    errors.append('%s.%s.%s: not base64; give plain text in %s' % (
                        where, name, key, 'stringData' if kind == usage.SECRET else 'data'))
    return errors


def errors(config, config_data, field='config_data', config_field='config', secret_field='secret_data'):
    """The mistakes in ``config_data`` (with ``config``: ``auto`` or the refs), each naming the field (a Secret's
    entry ``secret_field``) and the fix; [] when there is none. Pure: checked before anything is read or written."""
    if not config_data:
        return []
    if not isinstance(config_data, dict):
        return ['%s: a mapping of ConfigMap/NAME or Secret/NAME to its new data, got %s' % (
            field, type(config_data).__name__)]
    if not config:
        return ['%s needs %s: name the objects (or auto) whose consumers restart' % (field, config_field)]
    scope = None if usage.scope_errors(config, config_field) else usage.scope(config)
    found, config_data_field = [], field
    for ref in sorted(config_data, key=str):
        field = secret_field if str(ref).startswith(usage.SECRET + '/') else config_data_field
        hint = usage.entry_error(ref)
        if hint:
            found.append('%s[%r]: %s' % (field, str(ref)[:100], hint))
            continue
        if len(ref.partition('/')[2]) > 253 - len(SUFFIX):
            found.append('%s[%r]: the name is too long to keep its data from before beside it (%s, at most 253); '
                         'rename the object' % (field, ref, kept_name(ref.partition('/')[2])))
            continue
        if scope is not None and ref not in scope:
            found.append('%s[%r]: not in %s; add %s to %s, or leave it out of %s' % (
                field, ref, config_field, ref, config_field, field))
            continue
        found.extend(_entry_errors(field, ref, config_data[ref]))
    return found


def split_errors(config_data, secret_data):
    """The module takes a ConfigMap's data in config_data and a Secret's in secret_data (no_log: Ansible never
    shows nor logs its values); an entry in the other one is named with its fix."""
    found = ['config_data[%r]: give a Secret\'s data in secret_data (its values are never shown nor logged)' % ref
             for ref in sorted(config_data or {}, key=str) if str(ref).startswith(usage.SECRET + '/')]
    found.extend('secret_data[%r]: only Secret/NAME entries; give a ConfigMap\'s data in config_data' % str(ref)[:100]
                 for ref in sorted(secret_data or {}, key=str) if not str(ref).startswith(usage.SECRET + '/'))
    return found


def wanted(obj, value):
    """The object's data fields as ``value`` sets them: {field: {key: value}} of the fields it replaces (a Secret's
    stringData encoded into data, as the API server does)."""
    if obj.get('kind') == usage.SECRET:
        data = dict(value.get('data') or {}) if 'data' in value else (
            dict(obj.get('data') or {}) if 'stringData' not in value else {})
        data.update((key, base64.b64encode(item.encode('utf-8')).decode('ascii'))
                    for key, item in (value.get('stringData') or {}).items())
        return {'data': data}
    return dict((name, dict(value[name])) for name in FIELDS[usage.CONFIGMAP] if name in value)


def current(obj, fields):
    return dict((name, dict(obj.get(name) or {})) for name in fields)


def shown(kind, fields, other=None):
    """What a diff may show of ``fields``: a ConfigMap's as they are; a Secret's keys, each value masked (and
    marked changed against ``other``)."""
    if kind != usage.SECRET:
        return fields
    other = other or {}
    return dict((name, dict((key, MASK if (other.get(name) or {}).get(key) == value else MASK + ' (changed)')
                            for key, value in items.items())) for name, items in fields.items())


class ConfigData:
    """The writes of one run's config_data. ``objects``: the ConfigRollout's reader (ref -> object or None)."""

    def __init__(self, kube, namespace, config_data, read, run=None):
        self.kube, self.namespace, self.config_data, self.read, self.run = kube, namespace, config_data, read, run
        self.written, self.unchanged, self.kept, self.restored = [], [], {}, []
        self.rolling_back = False   # apply() found a rollback of this change that did not finish
        self.diff = {'before': {}, 'after': {}}

    def _path(self, kind, name=None):
        return paths.api_path('v1', RESOURCES[kind], self.namespace, name)

    def apply(self, check_mode=False):
        """Write each object's new data (its data from before kept first). All are read and checked before the
        first write. {ref: object as it is now, or as it would be in check mode} of those written."""
        planned = []
        for ref in sorted(self.config_data):
            obj = self.read(ref)
            if obj is None:
                raise ValidationError('config_data[%r]: %s not found in namespace %s; create it first (config_data '
                                      'writes the data of an object that exists); nothing was changed'
                                      % (ref, ref, self.namespace))
            target = wanted(obj, self.config_data[ref])
            before = current(obj, target)
            self.diff['before'][ref] = shown(obj['kind'], before, target)
            self.diff['after'][ref] = shown(obj['kind'], target, before)
            kept = self._kept(ref)
            if kept is not None and _annotations(kept).get(PREVIOUS_OF) != ref:
                raise ValidationError('config_data[%r]: %s/%s exists and is not the copy of %s\'s data this '
                                      'collection keeps (annotation %s); rename or delete it; nothing was changed'
                                      % (ref, obj['kind'], kept_name(ref.partition('/')[2]), ref, PREVIOUS_OF))
            notes = _annotations(kept)
            of_this_change = kept is not None and notes.get(REPLACED_BY) == record.digest(target)
            if of_this_change and notes.get(ROLLING_BACK) and before == current(kept, target):
                self.kept[ref] = kept   # a rollback of this change that did not finish: finished, not applied again
                self.rolling_back = True
            elif before == target:
                self.unchanged.append(ref)
                if of_this_change:
                    self.kept[ref] = kept   # an interrupted run of this change: its data from before, resumed
            else:
                planned.append((ref, obj, target, before, kept))
        planned = [] if self.rolling_back else planned
        if planned and not check_mode:   # refused here, before the first write, without the opt-in role's rights
            access.require(self.kube, self.namespace, [(verb, RESOURCES[ref.partition('/')[0]], '')
                                                       for ref in sorted(set(p[0] for p in planned)) for verb in VERBS])
        changed = {}
        for ref, obj, target, before, kept in planned:
            changed[ref] = self._write(ref, obj, target, before, kept, check_mode)
            self.written.append(ref)
        return changed

    def _kept(self, ref):
        kind, _sep, name = ref.partition('/')
        try:
            return self.kube.request('GET', self._path(kind, kept_name(name)))
        except NotFoundError:
            return None

    def _write(self, ref, obj, target, before, kept, check_mode):
        kind, _sep, name = ref.partition('/')
        meta = obj.get('metadata') or {}
        if check_mode:
            simulated = copy.deepcopy(obj)
            simulated.update(target)
            simulated['metadata']['managedFields'] = list(meta.get('managedFields') or []) + [
                {'manager': 'inplace.k8s', 'time': timestamp()}]
            return simulated
        copy_of = dict(before, metadata=dict(
            name=kept_name(name), labels={LABEL: 'true'},
            annotations={PREVIOUS_OF: ref, REPLACED_BY: record.digest(target), WRITTEN: timestamp(),
                         'inplace.k8s/run': str(self.run or '')},
            ownerReferences=[{'apiVersion': 'v1', 'kind': kind, 'name': name, 'uid': meta.get('uid')}]))
        if kind == usage.SECRET and obj.get('type'):
            copy_of['type'] = obj['type']
        if kept is None:
            self.kept[ref] = self.kube.request('POST', self._path(kind), body=copy_of)
        else:
            copy_of['metadata']['resourceVersion'] = (kept.get('metadata') or {}).get('resourceVersion')
            self.kept[ref] = self.kube.request('PUT', self._path(kind, kept_name(name)), body=copy_of)
        return self._put(ref, obj, target)

    def _put(self, ref, obj, target):
        """The object's fields ``target`` written (a key not there any more removed), guarded by the resourceVersion
        of ``obj``; the object as the API server stored it, read again."""
        kind, _sep, name = ref.partition('/')
        body = {'metadata': {'resourceVersion': (obj.get('metadata') or {}).get('resourceVersion')}}
        for field, items in target.items():
            body[field] = dict(items, **dict((key, None) for key in obj.get(field) or {} if key not in items))
        try:
            self.kube.request('PATCH', self._path(kind, name), body=body, content_type=MERGE_PATCH)
        except ConflictError:
            raise ConflictError('%s changed since it was read (resourceVersion %s): not overwritten; run again to '
                                'write its data over the change' % (ref, body['metadata']['resourceVersion']),
                                status=409)
        stored = self.kube.get_managed(self._path(kind, name))
        stored.setdefault('kind', kind)
        if current(stored, target) != target:
            raise ConflictError('%s: the API server stored other data than written (an admission changed it, or '
                                'another writer): its data from before is kept in %s/%s' % (
                                    ref, kind, kept_name(name)), status=409)
        return stored

    def cutoff(self):
        """When the new data was first written (the kept copies' note; the earliest): a container started before
        it never ran the new data. None without a kept copy."""
        times = [record.parse_time(_annotations(kept).get(WRITTEN)) for kept in self.kept.values()]
        times = [t for t in times if t is not None]
        return min(times) if times else None

    def restore(self):
        """The data from before written back (guarded, read again), each kept copy marked first (a run again
        finishes the rollback instead of applying the change again): {ref: object now}."""
        back = {}
        for ref, kept in sorted(self.kept.items()):
            kind, _sep, name = ref.partition('/')
            if not _annotations(kept).get(ROLLING_BACK):
                self.kept[ref] = kept = self.kube.request(
                    'PATCH', self._path(kind, kept_name(name)), content_type=MERGE_PATCH,
                    body={'metadata': {'annotations': {ROLLING_BACK: timestamp()}}})
            obj = self.kube.get_managed(self._path(kind, name))
            obj.setdefault('kind', kind)
            target = current(kept, wanted(obj, self.config_data[ref]))   # the fields the change replaced
            back[ref] = self._put(ref, obj, target) if current(obj, target) != target else obj
            self.restored.append(ref)
        return back

    def discard(self):
        """The kept copies deleted (the run finished, or rolled back): nothing of the run is left behind."""
        for ref in sorted(self.kept):
            kind, _sep, name = ref.partition('/')
            try:
                self.kube.request('DELETE', self._path(kind, kept_name(name)))
            except NotFoundError:
                pass
        self.kept = {}

    def shown_diff(self):
        """The diff of the objects written (or that would be): a ConfigMap's data, a Secret's keys (values masked)."""
        return dict((side, dict((ref, fields) for ref, fields in self.diff[side].items() if ref in self.written))
                    for side in ('before', 'after'))

    def report(self):
        """The result's ``config_data``: the objects written, unchanged, written back, and the kept copies of the
        data from before that are still there (names only, never data)."""
        return {'written': list(self.written), 'unchanged': list(self.unchanged), 'restored': list(self.restored),
                'kept': sorted('%s/%s' % (ref.partition('/')[0], kept_name(ref.partition('/')[2]))
                               for ref in self.kept)}


def _annotations(obj):
    return ((obj or {}).get('metadata') or {}).get('annotations') or {}
