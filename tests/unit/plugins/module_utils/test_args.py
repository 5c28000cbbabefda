# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.module_utils.common.parameters import remove_values

from ansible_collections.inplace.k8s.plugins.module_utils import args

KUBECONFIG = {
    'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'c',
    'clusters': [{'name': 'c', 'cluster': {'server': 'https://api.example:6443', 'certificate-authority-data': 'Q0E='}}],
    'users': [{'name': 'u', 'user': {'token': 'tok-SECRET-1', 'client-key-data': 'key-SECRET-2',
                                     'auth-provider': {'config': {'refresh-token': 'ref-SECRET-3'}}}},
              {'name': 'p', 'user': {'username': 'admin', 'password': 'pw-SECRET-4'}}],
    'contexts': [{'name': 'c', 'context': {'cluster': 'c', 'user': 'u'}}],
}


class Module(object):
    """What protect_secrets reads of an AnsibleModule, after AnsibleModule collected the values of the no_log
    options (every string of the kubeconfig among them)."""

    argument_spec = args.AUTH_ARG_SPEC

    def __init__(self, params):
        self.params = params
        names = ('kubeconfig', 'api_key', 'proxy')
        self.no_log_values = set().union(*[args._strings(params.get(name)) for name in names])


def test_credentials_of_a_kubeconfig_dict_are_masked_and_nothing_else():
    module = args.protect_secrets(Module({'kubeconfig': KUBECONFIG}))
    assert module.no_log_values == set(['tok-SECRET-1', 'key-SECRET-2', 'ref-SECRET-3', 'pw-SECRET-4'])
    shown = str(remove_values({'invocation': {'module_args': module.params}, 'msg': 'GET /api/v1 as admin'},
                              module.no_log_values))
    assert 'SECRET' not in shown and '/api/v1' in shown and 'https://api.example:6443' in shown


def test_a_kubeconfig_path_is_not_masked():
    assert args.protect_secrets(Module({'kubeconfig': '/home/me/.kube/config'})).no_log_values == set()
    assert args.protect_secrets(Module({'kubeconfig': None})).no_log_values == set()


def test_a_value_of_another_no_log_option_stays_masked():
    module = args.protect_secrets(Module({'kubeconfig': {'clusters': [{'name': 'same'}]}, 'api_key': 'same'}))
    assert module.no_log_values == set(['same'])


def test_credential_options_are_no_log():
    assert args.AUTH_ARG_SPEC['api_key']['no_log'] and args.AUTH_ARG_SPEC['password']['no_log']


def test_the_proxy_option_is_masked_down_to_its_credentials():
    assert args.protect_secrets(Module({'proxy': 'http://user:p%40ss@proxy.example:3128'})).no_log_values == set(
        ['user:p%40ss', 'p%40ss', 'p@ss'])
    assert args.protect_secrets(Module({'proxy': 'http://proxy.example:3128'})).no_log_values == set()


def test_a_kubeconfig_text_is_masked_whole_and_so_are_its_credentials():
    text = ('users:\n- name: u\n  user:\n    token: tok-SECRET-1\n'
            '    exec: {args: [--region, eu, --key=k-SECRET], env: [{name: A, value: e-SECRET}]}\n')
    assert args.protect_secrets(Module({'kubeconfig': text})).no_log_values == set(
        [text, 'tok-SECRET-1', 'eu', '--key=k-SECRET', 'k-SECRET', 'e-SECRET'])
