# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rbac/inplace-k8s-rbac.yml grants exactly what the code uses.

Every API call site of plugins/ is read from the source (its AST): the Kube client's calls (request, request_once,
get_managed, get_pod, list_pods, patch_pod, watch_pods, list_collection, watch_collection, api_client) and the
permissions checked through SelfSubjectAccessReview before a write (access.require and the ``permissions`` of the
operations, strategies and drains). A call whose path is a literal (or a literal format, or a module constant) is
turned into (verb, API group, resource) here; a call whose path is built at run time (a workload's kind, an owner's
kind) is looked up in CALL_SITES, which says what it may reach. The tests fail on:
  - a call site that is neither readable nor in CALL_SITES (a new call: add it, and its grant);
  - a CALL_SITES entry that no longer matches a call (stale);
  - a permission used (or checked) that no role of rbac/ grants;
  - a rule of rbac/ that no call uses and NOT_SEEN does not explain.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ast
import os
import re

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
PLUGINS = os.path.join(ROOT, 'plugins')
EDA_PLUGINS = os.path.join(ROOT, 'extensions', 'eda', 'plugins')
RBAC = os.path.join(ROOT, 'rbac', 'inplace-k8s-rbac.yml')

# The Kube client's methods that reach the API server, and the verb of those whose path says nothing of it.
CLIENT_CALLS = ('request', 'request_once', 'get_managed', 'get_pod', 'list_pods', 'patch_pod', 'watch_pods',
                'list_collection', 'watch_collection', 'api_client')
FIXED = {'get_pod': ('get', '', 'pods'), 'list_pods': ('list', '', 'pods'), 'watch_pods': ('watch', '', 'pods')}
VERBS = {'GET': 'get', 'POST': 'create', 'PATCH': 'patch', 'PUT': 'update', 'DELETE': 'delete'}
# The client itself (its methods are the call sites above) and its transport (urllib3 underneath).
CLIENT_FILES = ('module_utils/connection/client.py', 'module_utils/connection/transport.py')

WORKLOADS = [('apps', 'deployments'), ('apps', 'statefulsets'), ('apps', 'daemonsets')]
GITOPS = [('argoproj.io', 'applications'), ('kustomize.toolkit.fluxcd.io', 'kustomizations'),
          ('helm.toolkit.fluxcd.io', 'helmreleases')]
OWNER_READS = WORKLOADS + [('apps', 'replicasets')] + GITOPS
MAP = [('admissionregistration.k8s.io', 'mutatingadmissionpolicies'),
       ('admissionregistration.k8s.io', 'mutatingadmissionpolicybindings')]
CRR = ('apps.kruise.io', 'containerrecreaterequests')


def perms(verbs, targets):
    return sorted((verb, group, resource) for verb in verbs for group, resource in targets)


# (file under plugins/, enclosing function, HTTP method or client call) -> what that call may reach, where its path
# is built at run time. One entry per distinct call site key; say why when it is not obvious.
CALL_SITES = {
    # The EDA event source (extensions/eda): the ConfigMaps or Secrets it watches (its kinds option), and the
    # workloads that use a changed one.
    ('extensions/eda/plugins/event_source/config_changes.py', 'Watch._relist', 'list_collection'):
        perms(['list'], [('', 'configmaps'), ('', 'secrets')]),
    ('extensions/eda/plugins/event_source/config_changes.py', 'Watch.run', 'watch_collection'):
        perms(['watch'], [('', 'configmaps'), ('', 'secrets')]),
    ('extensions/eda/plugins/event_source/config_changes.py', 'workloads_using', 'list_collection'):
        perms(['list'], WORKLOADS),
    # The target workload itself (Workload.path() with its kind), and its ReplicaSets.
    ('module_utils/rollout/workload.py', 'Workload.read', 'GET'): perms(['get'], WORKLOADS),
    ('module_utils/rollout/workload.py', 'Workload.patch', 'PATCH'): perms(['patch'], WORKLOADS),
    ('module_utils/rollout/workload.py', 'Workload.replicasets', 'GET'): perms(['list'], [('apps', 'replicasets')]),
    # _patch_template: the workload's template, or a Deployment's current ReplicaSet's; re-read on a conflict.
    ('module_utils/rollout/workload.py', 'Workload._patch_template.reread', 'GET'):
        perms(['get'], WORKLOADS + [('apps', 'replicasets')]),
    ('module_utils/rollout/workload.py', 'Workload._patch_template.attempt', 'PATCH'):
        perms(['patch'], WORKLOADS + [('apps', 'replicasets')]),
    # A DaemonSet's revision for the new template, and a StatefulSet's current revision (partition.py).
    ('module_utils/rollout/workload.py', 'Workload.revision.find', 'GET'): perms(['list'], [('apps', 'controllerrevisions')]),
    ('module_utils/rollout/partition.py', 'before_values', 'GET'): perms(['get'], [('apps', 'controllerrevisions')]),
    # The revision history (history.py): read, the change-cause written, a Deployment's template kept.
    ('module_utils/rollout/history.py', 'History.entries_of', 'GET'): perms(['list'], [('apps', 'controllerrevisions')]),
    ('module_utils/rollout/history.py', 'History._annotate', 'PATCH'):
        perms(['patch'], [('apps', 'replicasets'), ('apps', 'controllerrevisions')]),
    ('module_utils/rollout/history.py', 'History.before', 'DELETE'): perms(['delete'], [('apps', 'replicasets')]),
    ('module_utils/rollout/history.py', 'History.after', 'POST'): perms(['create'], [('apps', 'replicasets')]),
    # Label drain: the controller of each pod (drain.CONTROLLER_RESOURCES), read to check its selector.
    ('module_utils/pods/drain.py', 'LabelDrain.check', 'GET'):
        perms(['get'], [('apps', 'replicasets'), ('apps', 'statefulsets'), ('apps', 'daemonsets'),
                        ('batch', 'jobs'), ('', 'replicationcontrollers')]),
    # Owners (owners/lookup.py APIS): one object with its managedFields, or a collection.
    ('module_utils/owners/lookup.py', 'Reader.get', 'get_managed'): perms(['get'], OWNER_READS),
    ('module_utils/owners/lookup.py', 'Reader.items', 'list_collection'):
        perms(['list'], [('autoscaling.k8s.io', 'verticalpodautoscalers'), ('autoscaling', 'horizontalpodautoscalers'),
                         ('argoproj.io', 'applications')]),
    ('module_utils/owners/suspend.py', '_patch', 'PATCH'): perms(['patch'], GITOPS),
    # The readiness gate policy (cluster-scoped objects, gates.object_path()).
    ('module_utils/operations/gates.py', '_read', 'GET'): perms(['get'], MAP),
    ('module_utils/operations/gates.py', 'installed_for', 'GET'): perms(['list'], MAP),
    ('module_utils/operations/gates.py', 'converge', 'DELETE'): perms(['delete'], MAP),
    ('module_utils/operations/gates.py', 'converge', 'POST'): perms(['create'], MAP),
    ('module_utils/operations/gates.py', 'converge', 'PUT'): perms(['update'], MAP),
    ('module_utils/operations/gates.py', 'ensure_policy', 'SSAR'): perms(['get', 'create', 'update', 'delete'], MAP),
    # Kubernetes Events: POST a new one, PATCH the series of a repeated one.
    ('module_utils/operations/events.py', 'Recorder._send', 'request_once'):
        perms(['create', 'patch'], [('events.k8s.io', 'events')]),
    # The server-side dry run of a resize: the pod, or its resize subresource.
    ('module_utils/operations/resize.py', 'ResizeOperation.preview', 'PATCH'): perms(['patch'], [('', 'pods'), ('', 'pods/resize')]),
    # OpenKruise ContainerRecreateRequests (strategies/kruise.py).
    ('module_utils/operations/strategies/kruise.py', 'KruiseStrategy.act', 'POST'): perms(['create'], [CRR]),
    ('module_utils/operations/strategies/kruise.py', 'KruiseStrategy.permissions', 'SSAR'): perms(['create', 'list', 'watch'], [CRR]),
    # pods/exec through the kubernetes client's websocket (connect_get_namespaced_pod_exec: GET upgraded; the
    # permission check asks both).
    ('module_utils/operations/strategies/podexec.py', 'run_exec', 'api_client'): perms(['get', 'create'], [('', 'pods/exec')]),
    # waiter.Watcher: the pods, or the ContainerRecreateRequests (strategies/kruise.py), listed then watched.
    ('module_utils/pods/waiter.py', 'Watcher.start', 'list_collection'): perms(['list'], [('', 'pods'), CRR]),
    ('module_utils/pods/waiter.py', 'Watcher._run', 'list_collection'): perms(['list'], [('', 'pods'), CRR]),
    ('module_utils/pods/waiter.py', 'Watcher._run', 'watch_collection'): perms(['watch'], [('', 'pods'), CRR]),
    # Paths built by connection/paths.py (quoted, checked): the namespace, the budgets, the Service of a label
    # drain, the EndpointSlices a drain is checked against, the node of a pod in flight (optional role -nodes).
    ('module_utils/pods/targets.py', 'require_namespace', 'GET'): perms(['get'], [('', 'namespaces')]),
    ('module_utils/rollout/budgets.py', 'budgets', 'GET'): perms(['list'], [('policy', 'poddisruptionbudgets')]),
    ('module_utils/rollout/labeldrain.py', 'LabelDrainStep._drain_service', 'GET'): perms(['get'], [('', 'services')]),
    ('module_utils/rollout/labeldrain.py', 'LabelDrainStep._select_by_drain_label', 'PATCH'): perms(['patch'], [('', 'services')]),
    ('module_utils/pods/drain.py', 'LabelDrain.serving', 'GET'): perms(['list'], [('discovery.k8s.io', 'endpointslices')]),
    ('module_utils/pods/nodes.py', 'NodeHealth.look', 'GET'): perms(['get'], [('', 'nodes')]),
    # Config rollouts: the ConfigMaps and Secrets the pods use (config/rollout.py RESOURCES).
    ('module_utils/config/rollout.py', 'ConfigRollout._object', 'get_managed'):
        perms(['get'], [('', 'configmaps'), ('', 'secrets')]),
    # config_data (config/data.py): the objects' data written, their data from before kept beside them and deleted.
    ('module_utils/config/data.py', 'ConfigData._kept', 'GET'): perms(['get'], [('', 'configmaps'), ('', 'secrets')]),
    ('module_utils/config/data.py', 'ConfigData._put', 'PATCH'): perms(['patch'], [('', 'configmaps'), ('', 'secrets')]),
    ('module_utils/config/data.py', 'ConfigData._put', 'get_managed'):
        perms(['get'], [('', 'configmaps'), ('', 'secrets')]),
    ('module_utils/config/data.py', 'ConfigData._write', 'POST'): perms(['create'], [('', 'configmaps'), ('', 'secrets')]),
    ('module_utils/config/data.py', 'ConfigData._write', 'PUT'): perms(['update'], [('', 'configmaps'), ('', 'secrets')]),
    ('module_utils/config/data.py', 'ConfigData.discard', 'DELETE'):
        perms(['delete'], [('', 'configmaps'), ('', 'secrets')]),
    ('module_utils/config/data.py', 'ConfigData.restore', 'PATCH'): perms(['patch'], [('', 'configmaps'), ('', 'secrets')]),
    ('module_utils/config/data.py', 'ConfigData.restore', 'get_managed'):
        perms(['get'], [('', 'configmaps'), ('', 'secrets')]),
    ('module_utils/config/data.py', 'ConfigData.apply', 'SSAR'): perms(
        ['create', 'update', 'patch', 'delete'], [('', 'configmaps'), ('', 'secrets')]),
    # Checks of permissions defined elsewhere (each read at its definition: prepull.PERMISSIONS, the operation's and
    # the drainer's permissions).
    ('module_utils/rollout/plan.py', 'PlanStep._prepare', 'SSAR'): [],
    ('module_utils/runner.py', 'execute_operation', 'SSAR'): [],
}

# Rules no call site shows, each with the reason it is granted.
NOT_SEEN = {}

# Requests every authenticated user may make (system:discovery, system:public-info-viewer, system:basic-user):
# they need no grant.
UNGRANTED = {('create', 'authorization.k8s.io', 'selfsubjectaccessreviews')}


def _relpath(path):
    """plugins/module_utils/x.py as module_utils/x.py; the EDA plugins from the collection's root."""
    base = PLUGINS if path.startswith(PLUGINS + os.sep) else ROOT
    return os.path.relpath(path, base).replace(os.sep, '/')


def _sources():
    for top in (PLUGINS, EDA_PLUGINS):
        for folder, _dirs, files in os.walk(top):
            for name in sorted(files):
                if name.endswith('.py'):
                    path = os.path.join(folder, name)
                    with open(path) as handle:
                        yield _relpath(path), ast.parse(handle.read(), path)


class _Reader(ast.NodeVisitor):
    """Collects the call sites of one file: (function, key, call node)."""

    def __init__(self, tree):
        self.constants = {}
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.constants[target.id] = node.value.value
        self.scope, self.sites = [], []

    def _in(self, node):
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_FunctionDef = visit_ClassDef = visit_AsyncFunctionDef = _in

    def visit_Call(self, node):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, 'id', None)
        if isinstance(func, ast.Attribute) and name in CLIENT_CALLS and _is_kube(func.value):
            key = name
            if name in ('request', 'request_once') and node.args and isinstance(node.args[0], ast.Constant):
                key = node.args[0].value
            self.sites.append(('.'.join(self.scope), key, node))
        elif name == 'require' and isinstance(func, ast.Attribute) and getattr(func.value, 'id', None) == 'access':
            self.sites.append(('.'.join(self.scope), 'SSAR', node))
        self.generic_visit(node)

    def visit_Assign(self, node):
        if any(isinstance(t, ast.Name) and t.id in ('permissions', 'PERMISSIONS') for t in node.targets):
            self.sites.append(('.'.join(self.scope + ['permissions']), 'SSAR', node.value))
        self.generic_visit(node)


def _is_kube(node):
    """The receiver is the Kube client (kube, self.kube, self.w.kube, self._kube)."""
    return (isinstance(node, ast.Name) and node.id == 'kube') or (isinstance(node, ast.Attribute) and node.attr in ('kube', '_kube'))


def _text(node, constants):
    """The path of a call as text, '{}' for each part known only at run time; None when nothing of it is literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = _text(node.left, constants)
        return None if left is None else re.sub(r'%[sd]', '{}', left)
    if isinstance(node, ast.Call) and getattr(node.func, 'attr', None) == 'pod_path':   # Kube.pod_path(ns, name, sub)
        args = node.args[:3]
        sub = (_text(args[2], constants) or '{}') if len(args) > 2 else ''
        return '/api/v1/namespaces/{}/pods' + ('/{}' if len(args) > 1 else '') + ('/' + sub if sub else '')
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left, constants), _text(node.right, constants)
        return None if left is None else left + (right if right is not None else '{}')
    return None


def _from_path(method, path):
    """[(verb, group, resource)] of a literal path ([] for discovery and /version); None when not understood."""
    parts = path.split('?')[0].strip('/').split('/')
    if parts == ['version'] or (parts[0] == 'apis' and len(parts) <= 3):
        return []   # GET /version, API discovery (system:public-info-viewer, system:discovery)
    if parts[0] == 'api' and len(parts) >= 2:
        group, rest = '', parts[2:]
    elif parts[0] == 'apis' and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        return None
    if rest[:1] == ['namespaces'] and len(rest) > 2:
        rest = rest[2:]
    resource = rest[0] + ('/' + rest[2] if len(rest) > 2 else '') if rest else '{}'
    if '{}' in resource:
        return None
    verb = VERBS[method]
    if method == 'GET' and len(rest) == 1:
        verb = 'list'
    return [(verb, group, resource)]


def _literal_permissions(node):
    """The (verb, group, resource) of the literal (verb, resource, group) tuples of an expression (a generator over
    a literal tuple of verbs included); None when some of it is not literal."""
    if isinstance(node, (ast.GeneratorExp, ast.ListComp)) and len(node.generators) == 1:
        loop = node.generators[0]
        try:
            values = ast.literal_eval(loop.iter)
        except ValueError:
            return None
        found = []
        for value in values:
            element = ast.parse(ast.unparse(node.elt).replace(loop.target.id, repr(value)), mode='eval').body
            one = _literal_permissions(ast.Tuple(elts=[element], ctx=ast.Load()))
            if one is None:
                return None
            found.extend(one)
        return found
    if isinstance(node, ast.Call) and getattr(node.func, 'id', None) == 'tuple' and len(node.args) == 1:
        return _literal_permissions(node.args[0])
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return None
    if isinstance(value, tuple) and len(value) == 3 and all(isinstance(v, str) for v in value):
        value = (value,)
    return [(verb, group, resource) for verb, resource, group in value]


def _site_permissions(relpath, function, key, node, constants):
    """What one call site uses: from its literal path or permissions, else from CALL_SITES (None: unknown)."""
    if key in FIXED:
        return [FIXED[key]]
    if key == 'patch_pod':
        sub = [k.value for k in node.keywords if k.arg == 'subresource']
        if not sub:
            return [('patch', '', 'pods')]
        if isinstance(sub[0], ast.Constant):
            return [('patch', '', 'pods/' + sub[0].value)]
    elif key in VERBS and len(node.args) > 1:
        path = _text(node.args[1], constants)
        if path is not None:
            return _from_path(key, path)
    elif key == 'SSAR':
        if isinstance(node, ast.Call):
            given = node.args[2:] + [k.value for k in node.keywords if k.arg == 'permissions']
            return _literal_permissions(given[0]) if given else None
        return _literal_permissions(node)
    return None


def call_sites():
    """{(file, function, key): [(verb, group, resource)] or None} of every call site in plugins/."""
    sites = {}
    for relpath, tree in _sources():
        if relpath in CLIENT_FILES:
            continue
        reader = _Reader(tree)
        reader.visit(tree)
        for function, key, node in reader.sites:
            found = _site_permissions(relpath, function, key, node, reader.constants)
            # plugins/module_utils/... named from plugins/
            entry = sites.setdefault((relpath, function, key), [])
            entry.append(found)
    return sites


def used():
    """{(verb, group, resource): [call sites]} of everything the code uses or checks."""
    out = {}
    for site, found in call_sites().items():
        for permissions in found:
            if permissions is None:
                permissions = CALL_SITES.get(site) or []
            for permission in permissions:
                out.setdefault(permission, []).append(site)
    return out


def granted():
    """{(verb, group, resource): [role names]} of rbac/inplace-k8s-rbac.yml."""
    with open(RBAC) as handle:
        document = yaml.safe_load(handle)
    out = {}
    for role in document['items']:
        for rule in role['rules']:
            for group in rule['apiGroups']:
                for resource in rule['resources']:
                    for verb in rule['verbs']:
                        out.setdefault((verb, group, resource), []).append(role['metadata']['name'])
    return out


def test_every_call_site_is_read_or_listed():
    sites = call_sites()
    unknown = sorted(site for site, found in sites.items() if None in found and site not in CALL_SITES)
    assert not unknown, ('API call sites whose path is built at run time and that CALL_SITES does not list: %s; '
                         'add each with what it may reach, and grant that in rbac/' % unknown)
    stale = sorted(site for site in CALL_SITES if site not in sites or None not in sites[site])
    assert not stale, 'CALL_SITES entries that match no call site whose path is built at run time: %s' % stale


def test_every_permission_used_is_granted():
    have = granted()
    missing = {p: sites for p, sites in used().items() if p not in have and p not in UNGRANTED}
    assert not missing, 'used but not granted by rbac/inplace-k8s-rbac.yml: %s' % sorted(missing.items())


def test_every_permission_granted_is_used():
    uses = used()
    unused = {p: roles for p, roles in granted().items() if p not in uses and p not in NOT_SEEN}
    assert not unused, 'granted by rbac/inplace-k8s-rbac.yml but used by no call site: %s' % sorted(unused.items())


def test_the_core_role_holds_no_pod_creation_and_no_service_write():
    core = {p for p, roles in granted().items() if 'inplace-k8s' in roles}
    assert ('create', 'apps', 'replicasets') not in core and ('create', '', 'pods') not in core
    assert ('patch', '', 'services') not in core and ('create', '', 'pods/exec') not in core


@pytest.mark.parametrize('method, path, expected', [
    ('GET', '/api/v1/namespaces/{}/services/{}', [('get', '', 'services')]),
    ('GET', '/apis/policy/v1/namespaces/{}/poddisruptionbudgets', [('list', 'policy', 'poddisruptionbudgets')]),
    ('GET', '/api/v1/namespaces/{}', [('get', '', 'namespaces')]),
    ('PATCH', '/api/v1/namespaces/{}/pods/{}/resize', [('patch', '', 'pods/resize')]),
    ('GET', '/version', []),
    ('GET', '/apis/apps.kruise.io/v1alpha1', []),
    ('GET', '{}/namespaces/{}/{}/{}', None),
])
def test_literal_paths_are_read(method, path, expected):
    assert _from_path(method, path) == expected


def test_a_new_call_site_without_a_grant_fails(monkeypatch):
    """A call site the tests do not know is named; a known one whose permission rbac/ lacks is named too."""
    monkeypatch.delitem(CALL_SITES, ('module_utils/rollout/partition.py', 'before_values', 'GET'))
    with pytest.raises(AssertionError, match='before_values'):
        test_every_call_site_is_read_or_listed()
    monkeypatch.setitem(CALL_SITES, ('module_utils/rollout/partition.py', 'before_values', 'GET'),
                        [('get', 'apps', 'secrets')])
    with pytest.raises(AssertionError, match="'get', 'apps', 'secrets'"):
        test_every_permission_used_is_granted()


def test_a_grant_without_a_use_fails(monkeypatch):
    monkeypatch.setitem(CALL_SITES, ('module_utils/rollout/partition.py', 'before_values', 'GET'), [])
    with pytest.raises(AssertionError, match="'get', 'apps', 'controllerrevisions'"):
        test_every_permission_granted_is_used()
