# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""From module parameters to a finished run: connect, select the pods, watch them, execute one
operation with the engine, and shape what the module returns. Every module's main() builds its
AnsibleModule and hands the rest to execute(); the pod modules' work is run(), whose core,
run_operation(), needs no AnsibleModule (the rollout's batch step runs the operations with it)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.inplace.k8s.plugins.module_utils import access, drain, engine, prepull, targets
from ansible_collections.inplace.k8s.plugins.module_utils.args import protect_secrets
from ansible_collections.inplace.k8s.plugins.module_utils.client import HAS_KUBERNETES, KUBERNETES_IMPORT_ERROR, Kube
from ansible_collections.inplace.k8s.plugins.module_utils.errors import (
    InplaceError, NoMatchError, OperationFailed, ValidationError,
)
from ansible_collections.inplace.k8s.plugins.module_utils.waiter import PodWatcher


def execute(module, work):
    """The body of every module's main(), right after AnsibleModule(): mask the credentials of a
    kubeconfig dict (args.protect_secrets), require the kubernetes client, call ``work()`` and exit with
    its result (its ``warnings`` become module warnings) or fail with an InplaceError's message."""
    protect_secrets(module)
    if not HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib('kubernetes'), exception=str(KUBERNETES_IMPORT_ERROR))
    try:
        result = work()
    except InplaceError as exc:
        module.fail_json(msg=exc.msg, **exc.details)
    for warning in result.pop('warnings', None) or []:
        module.warn(warning)
    module.exit_json(**result)


def check_options(params):
    """Option combinations that argument_spec cannot express."""
    for field in ('readiness_gate', 'drain_label'):
        if params.get(field) and not params.get('wait', True):
            raise ValidationError('%s needs wait=true: a drained pod is put back only after the change is '
                                  'verified' % field)
    drain.drainer(params.get('readiness_gate'), params.get('drain_label'))   # raises on a bad drain_label
    if params.get('max_concurrency', 1) < 1:
        raise ValidationError('max_concurrency must be at least 1')
    if params.get('wait_timeout', 1) < 1 or params.get('drain_seconds', 0) < 0:
        raise ValidationError('wait_timeout must be positive and drain_seconds not negative')


def empty_result():
    return {'changed': False, 'pods': [], 'summary': dict((s, 0) for s in engine.STATUSES + ('total', 'changed')),
            'diff': {'before': {}, 'after': {}}}


def run(module, operation, kube=None):
    """The pod modules' work: run_operation() with the module's params, check and diff mode; its
    warnings go to module.warn."""
    params = module.params
    kube = kube or Kube.from_params(params, pool_size=params['max_concurrency'])
    return run_operation(kube, params, operation, module.check_mode, module._diff, module.warn)


def run_operation(kube, params, operation, check_mode=False, diff=False, warn=None):
    """Execute ``operation`` on the pods that ``params`` (the pod modules' options: args.TARGET_ARG_SPEC,
    WAIT_ARG_SPEC, DRAIN_ARG_SPEC, on_failure) target; the result dict (``diff`` only with ``diff``).

    Raises NoMatchError, ValidationError (nothing written) or OperationFailed (with the result).
    Warnings go to ``warn(message)``.
    """
    warn = warn or (lambda message: None)
    check_options(params)
    pods, version, missing = targets.select_pods(kube, params)
    if missing:
        warn('pod(s) not found in namespace %s: %s' % (params['namespace'], ', '.join(missing)))
    if not pods:
        targets.require_namespace(kube, params['namespace'], **empty_result())
        message = 'no pod matched in namespace %s%s' % (params['namespace'], ' (not found: %s)' % ', '.join(missing)
                                                        if missing else '')
        if params.get('fail_on_no_match'):
            raise NoMatchError(message, **empty_result())
        warn(message)
        return empty_result()
    options = engine.options_from_params(params, check_mode)
    drainer = drain.drainer(options.readiness_gate, options.drain_label)
    watch = not check_mode and bool(options.wait or drainer)
    access.require(kube, params['namespace'], access.needed(operation, check_mode, watch, drainer) + (
        list(prepull.PERMISSIONS) if params.get('prepull') and not check_mode else []))
    watcher = None
    if watch:
        labels, fields = targets.selectors(params)
        watcher = PodWatcher(kube, params['namespace'], labels, fields).start(pods, version)
    runner = engine.Engine(kube, operation, options, watcher)
    try:
        result = runner.run(pods)
    finally:
        if watcher is not None:
            watcher.stop()
    for warning in runner.warnings:
        warn(warning)
    if not diff:
        result.pop('diff')
    failing = engine.ERROR_STATUSES + (() if params.get('continue_on_error') else (engine.REFUSED,))
    failed = [p for p in result['pods'] if p['status'] in failing]
    if failed:
        raise OperationFailed('%d of %d pod(s) failed: %s' % (len(failed), len(result['pods']), '; '.join(
            '%s: %s' % (p['name'], p['reason']) for p in failed)), **result)
    return result
