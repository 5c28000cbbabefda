# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The in-place undo of a finished rollout (rollout_workload state=previous; the role's
rollout_action=undo, playbooks/undo.yml): the revision to go back to, as ``kubectl rollout undo``
chooses it (the newest revision below the current one, or ``to_revision``), and the images and
resources that differ from the current template - the change the normal in-place rollout then makes.
Anything else that differs cannot be made in place: refused, naming the field.

Revisions are those ``kubectl rollout history`` lists (history.py): a Deployment's ReplicaSets by
their revision annotation, a StatefulSet's or DaemonSet's ControllerRevisions.
"""

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate
from ansible_collections.inplace.k8s.plugins.module_utils.pods import resources as resources_util
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.history import (
    History, images_of, revision_of, stored_template, without_hash,
)
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.templates import apply_change

FIELDS = ('requests', 'limits')


def first_difference(have, want, path='spec.template'):
    """The first field (dotted path) where two templates differ, or None."""
    if isinstance(have, dict) and isinstance(want, dict):
        for key in sorted(set(have) | set(want)):
            found = first_difference(have.get(key), want.get(key), '%s.%s' % (path, key))
            if found:
                return found
        return None
    if isinstance(have, list) and isinstance(want, list) and len(have) == len(want):
        for index, (a, b) in enumerate(zip(have, want)):
            name = b.get('name') if isinstance(b, dict) and b.get('name') else index
            found = first_difference(a, b, '%s[%s]' % (path, name))
            if found:
                return found
        return None
    return None if have == want else path


def change_to(current, previous):
    """(images, resources) that bring ``current`` (a template) to ``previous``; ValidationError naming the first
    other field that differs."""
    have = {'spec': current.get('spec') or {}}
    images, resources = {}, {}
    for name, image in sorted(images_of(previous).items()):
        info = podstate.find_container(have, name)
        if info is not None and info.spec.get('image') != image:
            images[name] = image
    for container in (previous.get('spec') or {}).get('containers') or []:
        info = podstate.find_container(have, container.get('name'))
        if info is None:
            continue
        wanted = resources_util.of_spec(container)
        if resources_util.resources_differ(info.spec, wanted):
            resources[container['name']] = {key: dict(wanted.get(key) or {}) for key in FIELDS}
    try:
        after = without_hash(apply_change(current, images, resources))
    except AttributeError:
        after = None
    field = first_difference(after, without_hash(previous)) if after is not None else 'spec.template.spec.containers'
    if field:
        raise ValidationError('the revision to go back to differs in %s, which an in-place rollout cannot change (only '
                              'images and resources); kubectl rollout undo does it natively, recreating the pods; '
                              'nothing was changed' % field, field=field)
    return images, resources


def previous(workload, to_revision=None):
    """The revision to go back to: {undo: {revision, name, current_revision, images, resources, change_cause}, message}."""
    workload.read()
    entries = History.entries_of(workload)
    current_template = without_hash(workload.template)
    current = [e for e in entries if stored_template(e) == current_template]
    current_revision = max([revision_of(e) for e in current] or [0])
    if to_revision:
        chosen = [e for e in entries if revision_of(e) == to_revision]
        if not chosen:
            raise ValidationError('%s %s/%s has no revision %d (undo_revision); its revisions: %s; nothing was changed'
                                  % (workload.kind, workload.namespace, workload.name, to_revision,
                                     ', '.join(str(n) for n in sorted(revision_of(e) for e in entries))))
    else:
        chosen = [e for e in entries if revision_of(e) < current_revision and stored_template(e) != current_template]
        if not chosen:
            raise ValidationError('%s %s/%s has no revision before its current one (%d) to go back to; nothing was '
                                  'changed' % (workload.kind, workload.namespace, workload.name, current_revision))
    entry = max(chosen, key=revision_of)
    template = stored_template(entry)
    if template == current_template:
        raise ValidationError('%s %s/%s: revision %d is the current template; nothing to undo'
                              % (workload.kind, workload.namespace, workload.name, revision_of(entry)))
    images, resources = change_to(workload.template, template)
    cause = (podstate.meta(entry, 'annotations') or {}).get('kubernetes.io/change-cause')
    found = {'revision': revision_of(entry), 'name': podstate.meta(entry, 'name'), 'current_revision': current_revision,
             'images': images, 'resources': resources, 'change_cause': cause}
    return {'changed': False, 'undo': found, 'message': 'undo: revision %d -> revision %d (%s), in place: images %s, '
            'resources %s' % (current_revision, found['revision'], found['name'], images or '{}', resources or '{}')}
