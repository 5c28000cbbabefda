# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Argument specs shared by every module, each paired with the doc fragment of the same name.

AUTH_ARG_SPEC   <-> plugins/doc_fragments/auth.py     (kubernetes.core-compatible options and K8S_AUTH_* variables)
TARGET_ARG_SPEC <-> plugins/doc_fragments/target.py   (which pods, how many at once)
WAIT_ARG_SPEC   <-> plugins/doc_fragments/wait.py     (wait, wait_timeout)
DRAIN_ARG_SPEC  <-> plugins/doc_fragments/drain.py    (readiness gate handling)
OWNERS_ARG_SPEC <-> plugins/doc_fragments/owners.py   (who else manages the workload: the policy)
EVENTS_ARG_SPEC <-> plugins/doc_fragments/events.py   (Kubernetes Events)
"""

import copy

from ansible.module_utils.basic import env_fallback

from ansible_collections.inplace.k8s.plugins.module_utils.connection import kubeconfig as kubeconfig_loader, proxy


def _env(name):
    return (env_fallback, ['K8S_AUTH_%s' % name])


AUTH_ARG_SPEC = {
    # no_log: AnsibleModule logs its parameters to syslog/journald before any code of ours runs; protect_secrets
    # then narrows the masking to the kubeconfig's credentials (NARROWED).
    'kubeconfig': {'type': 'raw', 'no_log': True, 'fallback': _env('KUBECONFIG')},
    'context': {'type': 'str', 'fallback': _env('CONTEXT')},
    'host': {'type': 'str', 'fallback': _env('HOST')},
    'api_key': {'type': 'str', 'no_log': True, 'fallback': _env('API_KEY')},
    'username': {'type': 'str', 'fallback': _env('USERNAME')},
    'password': {'type': 'str', 'no_log': True, 'fallback': _env('PASSWORD')},
    'validate_certs': {'type': 'bool', 'aliases': ['verify_ssl'], 'fallback': _env('VERIFY_SSL')},
    'ca_cert': {'type': 'path', 'aliases': ['ssl_ca_cert'], 'fallback': _env('SSL_CA_CERT')},
    'client_cert': {'type': 'path', 'aliases': ['cert_file'], 'fallback': _env('CERT_FILE')},
    'client_key': {'type': 'path', 'aliases': ['key_file'], 'no_log': False, 'fallback': _env('KEY_FILE')},
    'proxy': {'type': 'str', 'no_log': True, 'fallback': _env('PROXY')},   # user:password@ (see kubeconfig)
    'no_proxy': {'type': 'str', 'fallback': _env('NO_PROXY')},
    'proxy_headers': {'type': 'dict', 'options': {
        'proxy_basic_auth': {'type': 'str', 'no_log': True, 'fallback': _env('PROXY_HEADERS_PROXY_BASIC_AUTH')},
        'basic_auth': {'type': 'str', 'no_log': True, 'fallback': _env('PROXY_HEADERS_BASIC_AUTH')},
        'user_agent': {'type': 'str', 'fallback': _env('PROXY_HEADERS_USER_AGENT')},
    }},
    'persist_config': {'type': 'bool', 'fallback': _env('PERSIST_CONFIG')},
    'impersonate_user': {'type': 'str', 'fallback': _env('IMPERSONATE_USER')},
    'impersonate_groups': {'type': 'list', 'elements': 'str', 'fallback': _env('IMPERSONATE_GROUPS')},
    'impersonate_uid': {'type': 'str', 'fallback': _env('IMPERSONATE_UID')},
    'impersonate_extra': {'type': 'dict', 'fallback': _env('IMPERSONATE_EXTRA')},
}

TARGET_ARG_SPEC = {
    'namespace': {'type': 'str', 'required': True},
    'name': {'type': 'str'},
    'names': {'type': 'list', 'elements': 'str'},
    'label_selectors': {'type': 'list', 'elements': 'str'},
    'field_selectors': {'type': 'list', 'elements': 'str'},
    'fail_on_no_match': {'type': 'bool', 'default': False},
    'continue_on_error': {'type': 'bool', 'default': False},
    'max_concurrency': {'type': 'int', 'default': 10},
    'force_takeover': {'type': 'bool', 'default': False},
}

# AnsibleModule(**TARGET_CONSTRAINTS): exactly one way of choosing pods.
TARGET_CONSTRAINTS = {
    'mutually_exclusive': [('name', 'names', 'label_selectors'), ('name', 'names', 'field_selectors')],
    'required_one_of': [('name', 'names', 'label_selectors', 'field_selectors')],
}

# The default of every wait_timeout (here, the rollout's ROLLOUT_ARG_SPEC and the role's rollout_wait_timeout, which
# tests/unit checks against it) and of the waits that take no option: written once here.
WAIT_TIMEOUT = 300

WAIT_ARG_SPEC = {
    'wait': {'type': 'bool', 'default': True},
    'wait_timeout': {'type': 'int', 'default': WAIT_TIMEOUT},
    'min_ready_seconds': {'type': 'int', 'default': 0},
}

EVENTS_ARG_SPEC = {
    'events': {'type': 'bool', 'default': True},
}

DRAIN_ARG_SPEC = {
    'readiness_gate': {'type': 'str'},
    'drain_label': {'type': 'str'},
    'drain_seconds': {'type': 'int', 'default': 0},
    'require_readiness_gate': {'type': 'bool', 'default': False},
    'readiness_gate_on_failure': {
        'type': 'str', 'default': 'restore_if_healthy',
        'choices': ['restore_if_healthy', 'restore', 'keep_false'],
    },
}

OWNERS_ARG_SPEC = {
    'owners': {'type': 'str', 'default': 'refuse', 'choices': ['refuse', 'warn', 'proceed']},
}


# Keys whose values are credentials inside a kubeconfig (users[].user, auth-provider config).
KUBECONFIG_SECRET_KEYS = frozenset(['token', 'password', 'client-key-data', 'access-token', 'id-token',
                                    'refresh-token', 'client-secret'])


def _exec_secrets(plugin):
    """What an exec plugin's ``env`` values and ``args`` may hold: every value and argument but a bare flag
    (``--region``; of ``--token=x`` the whole and ``x``)."""
    found = set()
    for item in plugin.get('env') or []:
        if isinstance(item, dict) and isinstance(item.get('value'), str):
            found.add(item['value'])
    for arg in plugin.get('args') or []:
        if not isinstance(arg, str):
            continue
        if arg.startswith('-'):
            if '=' in arg:
                found.update((arg, arg.partition('=')[2]))
        else:
            found.add(arg)
    return found


def kubeconfig_secrets(value):
    """The credential strings inside a kubeconfig (dict, nested anywhere), for masking: the values of
    KUBECONFIG_SECRET_KEYS, an exec plugin's env values and args, the user-info of a proxy-url."""
    found = set()
    if isinstance(value, dict):
        for key, item in value.items():
            if key in KUBECONFIG_SECRET_KEYS and isinstance(item, str):
                found.add(item)
            elif key == 'exec' and isinstance(item, dict):
                found.update(_exec_secrets(item))
            elif key == 'proxy-url' and isinstance(item, str):
                found.update(proxy.credentials(item))
            else:
                found.update(kubeconfig_secrets(item))
    elif isinstance(value, list):
        for item in value:
            found.update(kubeconfig_secrets(item))
    return set(item for item in found if item)


def _strings(value):
    """Every string of ``value`` (as AnsibleModule collects a no_log option's values)."""
    if isinstance(value, dict):
        return set().union(*[_strings(v) for v in value.values()]) if value else set()
    if isinstance(value, (list, tuple)):
        return set().union(*[_strings(v) for v in value]) if value else set()
    if isinstance(value, bool) or value is None or value == '':
        return set()
    return set([value if isinstance(value, str) else str(value)]) if isinstance(value, (str, int, float)) else set()


def _other_no_log_values(spec, params, skip):
    """The values of the no_log options of ``spec`` but those named in ``skip`` (one level of suboptions)."""
    found = set()
    for name, option in spec.items():
        if name in skip:
            continue
        value = params.get(name)
        if option.get('no_log'):
            found.update(_strings(value))
        for sub_name, sub_option in (option.get('options') or {}).items():
            if sub_option.get('no_log'):
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, dict):
                        found.update(_strings(item.get(sub_name)))
    return found


# no_log options whose masking protect_secrets narrows to the secrets they hold.
NARROWED = ('kubeconfig', 'proxy')


def protect_secrets(module):
    """What is masked of the auth options in everything the module returns (results, errors, warnings, the -vvv
    invocation) and logs. Call right after AnsibleModule().

    ``kubeconfig`` and ``proxy`` are no_log, so AnsibleModule's own log line never holds them; but Ansible masks the
    no_log values as substrings everywhere, and the short strings of a kubeconfig dict (``v1``, cluster names) would
    mangle every message. So only their secrets stay masked: the credentials of a kubeconfig (kubeconfig_secrets),
    the user-info of the proxy URL; a kubeconfig path is not masked (messages name it), a kubeconfig text stays
    masked whole, with its credentials."""
    params = module.params
    keep = _other_no_log_values(getattr(module, 'argument_spec', None) or {}, params, NARROWED)
    for name in NARROWED:
        module.no_log_values.difference_update(_strings(params.get(name)) - keep)
    kubeconfig = params.get('kubeconfig')
    if kubeconfig_loader.is_text(kubeconfig):
        module.no_log_values.add(kubeconfig)
        try:
            kubeconfig = kubeconfig_loader.parse_text(kubeconfig)
        except kubeconfig_loader.KubeconfigError:
            kubeconfig = None
    module.no_log_values.update(kubeconfig_secrets(kubeconfig))
    module.no_log_values.update(proxy.credentials(params.get('proxy') or ''))
    return module


def default(spec, name):
    """The default of option ``name`` of ``spec`` as the typed options hold it: a list's as a tuple, None without
    one (the one place a default is written is the argument spec)."""
    value = spec[name].get('default')
    if isinstance(value, list) or value is None and spec[name]['type'] == 'list':
        return tuple(value or ())
    return value


def argument_spec(*specs, **extra):
    """One module's argument spec: deep copies of the shared specs plus the module's own options."""
    result = {}
    for spec in specs + (extra,):
        result.update(copy.deepcopy(spec))
    return result
