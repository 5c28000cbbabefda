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


def _env(name):
    return (env_fallback, ['K8S_AUTH_%s' % name])


AUTH_ARG_SPEC = {
    'kubeconfig': {'type': 'raw', 'fallback': _env('KUBECONFIG')},
    'context': {'type': 'str', 'fallback': _env('CONTEXT')},
    'host': {'type': 'str', 'fallback': _env('HOST')},
    'api_key': {'type': 'str', 'no_log': True, 'fallback': _env('API_KEY')},
    'username': {'type': 'str', 'fallback': _env('USERNAME')},
    'password': {'type': 'str', 'no_log': True, 'fallback': _env('PASSWORD')},
    'validate_certs': {'type': 'bool', 'aliases': ['verify_ssl'], 'fallback': _env('VERIFY_SSL')},
    'ca_cert': {'type': 'path', 'aliases': ['ssl_ca_cert'], 'fallback': _env('SSL_CA_CERT')},
    'client_cert': {'type': 'path', 'aliases': ['cert_file'], 'fallback': _env('CERT_FILE')},
    'client_key': {'type': 'path', 'aliases': ['key_file'], 'no_log': False, 'fallback': _env('KEY_FILE')},
    'proxy': {'type': 'str', 'fallback': _env('PROXY')},
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

WAIT_ARG_SPEC = {
    'wait': {'type': 'bool', 'default': True},
    'wait_timeout': {'type': 'int', 'default': 300},
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


# Keys whose values are credentials inside a kubeconfig given as a dict (users[].user, auth-provider config).
KUBECONFIG_SECRET_KEYS = frozenset(['token', 'password', 'client-key-data', 'access-token', 'id-token',
                                    'refresh-token', 'client-secret'])


def kubeconfig_secrets(value):
    """The credential strings inside a kubeconfig dict (nested anywhere), for masking."""
    found = set()
    if isinstance(value, dict):
        for key, item in value.items():
            if key in KUBECONFIG_SECRET_KEYS and isinstance(item, str) and item:
                found.add(item)
            else:
                found.update(kubeconfig_secrets(item))
    elif isinstance(value, list):
        for item in value:
            found.update(kubeconfig_secrets(item))
    return found


def protect_secrets(module):
    """Mask the credentials of a kubeconfig dict in everything the module returns (results, errors,
    the -vvv invocation), as no_log masks api_key and password. ``kubeconfig`` itself cannot be
    no_log: Ansible masks no_log values as substrings everywhere, and a dict's short leaves (``v1``,
    cluster names) would mangle every message. Call right after AnsibleModule()."""
    module.no_log_values.update(kubeconfig_secrets(module.params.get('kubeconfig')))
    return module


def argument_spec(*specs, **extra):
    """One module's argument spec: deep copies of the shared specs plus the module's own options."""
    result = {}
    for spec in specs + (extra,):
        result.update(copy.deepcopy(spec))
    return result
