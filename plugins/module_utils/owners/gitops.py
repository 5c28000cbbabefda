# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""gitops_suspend's work: its options parsed once, then suspend (leaving a keeper, process/keeper.py) or resume
(owners/suspend.py)."""

import uuid
from collections import namedtuple

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.process import keeper
from ansible_collections.inplace.k8s.plugins.module_utils.owners.suspend import find, resume, suspend

MAX_SECONDS = 21600   # a keeper resumes at the latest after this (gitops_suspend max_seconds)


class SuspendOptions(namedtuple('SuspendOptions', 'state namespace kind name objects run max_seconds')):
    """gitops_suspend's options, parsed once at the edge."""

    __slots__ = ()

    @classmethod
    def from_params(cls, params):
        options = cls(**dict((name, params.get(name)) for name in cls._fields))
        if not (options.kind and options.name) and not options.objects:
            raise ValidationError('give the workload (kind and name) or objects; nothing was changed')
        if options.max_seconds is not None and options.max_seconds < 1:
            raise ValidationError('max_seconds must be at least 1; nothing was changed')
        return options


def run(connect, options, check_mode=False):
    """gitops_suspend's work: suspend (and leave a keeper) or resume; the module's result."""
    kube = connect()
    found, skipped, ignored = find(kube, options.kind, options.namespace, options.name, options.objects)
    if options.state == 'suspended':
        run_id = options.run or uuid.uuid4().hex
        objects = suspend(kube, found, run_id, check_mode)
        held = [o for o in objects if o['action'] in ('suspended', 'unchanged') and o['reason'].startswith(
            ('was syncing', 'taken over', 'suspended by this run'))]
        keeper_pid = None
        if held and not check_mode:
            keeper_pid = keeper.start(connect, held, run_id, options.max_seconds or MAX_SECONDS)
    else:
        run_id = options.run
        objects = resume(kube, found, run_id, check_mode)
        keeper_pid = None
    result = {'changed': any(o['action'] in ('suspended', 'resumed') for o in objects), 'run': run_id,
              'objects': objects + ignored, 'unchecked': skipped, 'warnings': []}
    if options.state == 'suspended':
        result['keeper'] = keeper_pid
        if any(o['action'] == 'suspended' for o in objects) and not check_mode and keeper_pid is None:
            result['warnings'].append('no keeper could start (no ansible-playbook above this module): a cancel or '
                                      'kill of this run leaves the objects suspended until gitops_suspend '
                                      'state=resumed runs')
    result['warnings'].extend('not checked: %s' % note for note in skipped)
    result['warnings'].extend('%s %s/%s: %s' % (o['kind'], o['namespace'], o['name'], o['reason']) for o in ignored)
    return result
