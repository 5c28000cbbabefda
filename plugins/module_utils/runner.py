# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""One way to run a pod operation, above all of them: options -> connection, pod selection, watch,
the engine with the operation (image, resize or recreate), and the result a module returns.

A pod module's main() builds its AnsibleModule and hands the rest to execute() with
``lambda cancel: run_module(module, ImageChange, cancel)`` (or ResizeChange, RestartChange; ``cancel``: the
run's token, process/cancel.py): the module's params are parsed once, there, into an options.Task. run() needs
no AnsibleModule: the rollout's batch step builds its Task directly and runs the operations in-process with its
own client.
"""

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.inplace.k8s.plugins.module_utils.args import protect_secrets
from ansible_collections.inplace.k8s.plugins.module_utils.connection import access
from ansible_collections.inplace.k8s.plugins.module_utils.connection import settings as connection_settings
from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import HAS_URLLIB3, URLLIB3_IMPORT_ERROR, Kube
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import (
    InplaceError, NoMatchError, OperationFailed, ValidationError,
)
from ansible_collections.inplace.k8s.plugins.module_utils.operations import engine, events as kube_events, prepull
from ansible_collections.inplace.k8s.plugins.module_utils.options import (
    Connection, ImageChange, ResizeChange, RestartChange, Task,
)
from ansible_collections.inplace.k8s.plugins.module_utils.owners import check as owners
from ansible_collections.inplace.k8s.plugins.module_utils.pods import departure, drain, targets
from ansible_collections.inplace.k8s.plugins.module_utils.process import cancel, guardian
from ansible_collections.inplace.k8s.plugins.module_utils.pods.waiter import PodWatcher


def execute(module, work):
    """The body of every module's main(), right after AnsibleModule(): mask the credentials of a
    kubeconfig dict (args.protect_secrets), require urllib3 (the kubernetes package only where a path needs it), call ``work(cancel)`` and exit with
    its result (its ``warnings`` become module warnings) or fail with an InplaceError's message. A module
    that drains pods (readiness_gate or drain_label, not in check mode) first forks its guardian
    (process/guardian.py: it puts drained pods back if this process is killed mid-change), then every module
    starts its cancel watch (process/cancel.py): ``cancel``, the token ``work`` passes down to what starts pods;
    once its playbook is cancelled it starts no pod and fails naming them."""
    protect_secrets(module)
    connection_settings.start_warnings()
    if not HAS_URLLIB3:
        module.fail_json(msg=missing_required_lib('urllib3 >= 2'), exception=str(URLLIB3_IMPORT_ERROR))
    params = module.params
    if not module.check_mode and (params.get('readiness_gate') or params.get('drain_label')):
        guardian.start(lambda: client(params, pool_size=4))
    token, watch = cancel.watch()   # after the guardian's fork: it starts a thread
    try:
        result = work(token)
    except InplaceError as exc:
        warn_connection(module)
        if token.cancelled():
            exc.details.pop('cancelled', None)
            module.fail_json(msg='%s; %s' % (token.message(), exc.msg), cancelled=True, **exc.details)
        module.fail_json(msg=exc.msg, **exc.details)
    finally:
        watch.stop()
        guardian.stop()
    warn_connection(module)
    for warning in result.pop('warnings', None) or []:
        module.warn(warning)
    if token.cancelled():
        result.pop('msg', None)
        module.fail_json(msg=token.message(), cancelled=True, **result)
    module.exit_json(**result)


def warn_connection(module):
    """The connection's warnings (settings.warn_once: TLS verification off), once each, as module warnings."""
    for warning in connection_settings.take_warnings():
        module.warn(warning)


def check_options(task):
    """Option combinations that argument_spec cannot express; the drain mode asked (drain.Drainer or None)."""
    for field in ('readiness_gate', 'drain_label'):
        if getattr(task.drain, field) and not task.wait.enabled:
            raise ValidationError('%s needs wait=true: a drained pod is put back only after the change is '
                                  'verified' % field)
    drainer = drain.drainer(task.drain.readiness_gate, task.drain.drain_label)   # raises on a bad drain_label
    if task.target.max_concurrency < 1:
        raise ValidationError('max_concurrency must be at least 1')
    if task.wait.timeout < 1 or task.drain.seconds < 0:
        raise ValidationError('wait_timeout must be positive and drain_seconds not negative')
    return drainer


def empty_result():
    return {'changed': False, 'pods': [], 'summary': {s: 0 for s in engine.STATUSES + ('total', 'changed')},
            'diff': {'before': {}, 'after': {}}}


def engine_options(task, check_mode):
    """What the engine needs of a task."""
    return engine.Options(
        check_mode=check_mode, wait=task.wait.enabled, wait_timeout=task.wait.timeout,
        max_concurrency=max(1, task.target.max_concurrency or 1), readiness_gate=task.drain.readiness_gate,
        drain_seconds=task.drain.seconds, require_readiness_gate=task.drain.required,
        gate_on_failure=task.drain.on_failure, on_failure=task.change.on_failure,
        min_ready_seconds=task.wait.min_ready_seconds, force_takeover=task.target.force_takeover,
        drain_label=task.drain.drain_label, prepull=bool(getattr(task.change, 'prepull', False)),
        prepull_run=getattr(task.change, 'prepull_run', None), prepull_ahead=getattr(task.change, 'prepull_ahead', None),
        window=task.target.window)


def connect(task):
    """The client of a module's task (its connection options, a pool sized for its concurrency)."""
    return Kube.connect(task.connection, pool_size=task.target.max_concurrency)


def client(params, pool_size=10):
    """The client of a module that runs no pod operation (its connection options parsed here)."""
    return Kube.connect(Connection.from_params(params), pool_size)


def run_module(module, change, cancel=None):
    """A pod module's work: its params parsed once into a Task (``change``: the options class of its
    change), then run() with check and diff mode and the run's ``cancel`` token; warnings go to module.warn."""
    task = Task.from_params(module.params, change)
    return run(task, check_mode=module.check_mode, diff=module._diff, warn=module.warn,
               run_command=module.run_command, cancel=cancel)


def run(task, kube=None, check_mode=False, diff=False, warn=None, run_command=None, events=None, cancel=None):
    """Run the operation of ``task`` (options.Task) on its pods: the result dict (``diff`` only with
    ``diff``). ``kube``: the client (default: one from task.connection); ``run_command``: how strategy cri
    runs crictl (AnsibleModule.run_command's signature); ``events``: the run's events.Recorder (default: one
    of this call, as task.events asks, none in check mode); ``cancel``: the run's token (process/cancel.Cancel;
    default: one never cancelled).

    Raises NoMatchError, ValidationError (nothing written) or OperationFailed (with the result).
    Warnings go to ``warn(message)``.
    """
    warn = warn or (lambda message: None)
    kube = kube or connect(task)
    if events is None:
        events = kube_events.Recorder(kube, task.events and not check_mode, warn=warn)
    operation, task = build(kube, task, warn, run_command)
    try:
        result = execute_operation(kube, task, operation, check_mode, diff, warn, events, cancel)
    except OperationFailed as exc:
        exc.details.update(operation.report(failed=True))
        raise
    finally:
        operation.close()
    result.update(operation.report())
    return result


def build(kube, task, warn, run_command=None):
    """(the operation of task.change, the task it runs with): the operation's module builds it with
    build(kube, task, warn, run_command), and returns a copy of the task when the operation needs other
    options (the caller's task is never changed). Each operation module is imported when its change
    runs, so that a module starts up with only its own (Ansible packs imports in functions too)."""
    change = task.change
    if isinstance(change, ImageChange):
        from ansible_collections.inplace.k8s.plugins.module_utils.operations import image as operation
    elif isinstance(change, ResizeChange):
        from ansible_collections.inplace.k8s.plugins.module_utils.operations import resize as operation
    elif isinstance(change, RestartChange):
        from ansible_collections.inplace.k8s.plugins.module_utils.operations import recreate as operation
    else:
        raise ValidationError('unknown change: %r' % (change,))
    return operation.build(kube, task, warn, run_command)


def execute_operation(kube, task, operation, check_mode=False, diff=False, warn=None, events=None, cancel=None):
    """Execute ``operation`` on the pods that ``task`` targets."""
    warn = warn or (lambda message: None)
    drainer = check_options(task)
    target = task.target
    # The rollout window watches its workload's pods already: the engine shares that watch (and its cache)
    # instead of listing and watching them a second time. Its owner starts and stops it.
    shared = target.window.watcher if target.window is not None and not check_mode else None
    pods, version, missing = targets.select_pods(kube, target, shared)
    if missing:
        warn('pod(s) not found in namespace %s: %s' % (target.namespace, ', '.join(missing)))
    if not pods:
        targets.require_namespace(kube, target.namespace, **empty_result())
        message = 'no pod matched in namespace %s%s' % (target.namespace, ' (not found: %s)' % ', '.join(missing)
                                                        if missing else '')
        if target.fail_on_no_match:
            raise NoMatchError(message, **empty_result())
        warn(message)
        return empty_result()
    known = owners_of(kube, task, pods, warn)   # a refusal raises here: nothing written
    options = engine_options(task, check_mode)
    watch = not check_mode and bool(options.wait or drainer)
    access.require(kube, target.namespace, access.needed(operation, check_mode, watch, drainer) + (
        list(prepull.PERMISSIONS) if options.prepull and not check_mode else []))
    watcher = shared if watch else None
    if watch and shared is None:
        labels, fields = target.selectors()
        watcher = PodWatcher(kube, target.namespace, labels, fields).start(pods, version)
    runner = engine.Engine(kube, operation, options, watcher, events=events, cancel=cancel)
    try:
        result = runner.run(pods)
    finally:
        if watcher is not None and watcher is not shared:
            watcher.stop()
    for warning in runner.warnings:
        warn(warning)
    if known is not None:
        result['owners'] = known
    if not diff:
        result.pop('diff')
    if missing and target.window is not None:
        # The rollout's: its pods deleted before their turn, and why (rollout/batch_step.py gone_pods).
        result['missing'] = [departure.missing(shared, name) for name in missing]
    failing = engine.ERROR_STATUSES + (() if target.continue_on_error else (engine.REFUSED,))
    failed = [p for p in result['pods'] if p['status'] in failing]
    if failed:
        raise OperationFailed('%d of %d pod(s) failed: %s' % (len(failed), len(result['pods']), '; '.join(
            '%s: %s' % (p['name'], p['reason']) for p in failed)), **result)
    return result


def owners_of(kube, task, pods, warn):
    """The owners report of a pod module's change (owners/check.py; None: not asked, or a restart, which no owner
    reverts); raises ValidationError when the policy refuses."""
    change = task.change
    if not task.target.owners or isinstance(change, RestartChange):
        return None
    if isinstance(change, ResizeChange):
        return owners.pods(kube, pods, owners.resources_change(change.containers), task.target.owners, warn)
    return owners.pods(kube, pods, owners.image_change(change.containers), task.target.owners, warn)
