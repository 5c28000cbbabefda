# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""No secret of the auth options leaves a module, through its main(): a kubeconfig given as text or as a dict
(tokens, passwords, client-key-data, an exec plugin's env and args, the user-info of its proxy-url) and the proxy
option's credentials appear neither in the result (msg, warnings, the -vvv invocation), nor in the Events, nor in
what AnsibleModule logs to syslog/journald (its "Invoked with" line comes before any code of ours). Client keys
never land on disk, and a run with TLS verification off says so once."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import json
import sys
import tempfile
import types
import zipimport

import pytest
import yaml

from ansible.module_utils import _internal as ansible_internal, basic
from ansible.module_utils.common import warnings as ansible_warnings

from ansible_collections.inplace.k8s.plugins.module_utils.connection import client
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import load, module_args
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import FakeCluster

TOKEN = 'tok-SECRET-6b1f'
PASSWORD = 'pw-SECRET-77aa'
KEY = b'-----BEGIN EC PRIVATE KEY-----\nMHcKEY-SECRET-0c0c\n-----END EC PRIVATE KEY-----\n'
CERT = b'-----BEGIN CERTIFICATE-----\nMIIBclientcertificate\n-----END CERTIFICATE-----\n'
SECRETS = (TOKEN, PASSWORD, 'KEY-SECRET', base64.b64encode(KEY).decode(), 'ENV-SECRET', 'ARG-SECRET',
           'PROXY-SECRET')


def kubeconfig(user, cluster=None, context='web'):
    return {'apiVersion': 'v1', 'kind': 'Config', 'current-context': context,
            'clusters': [{'name': 'prod', 'cluster': dict({'server': 'https://api.example:6443'}, **(cluster or {}))}],
            'users': [{'name': 'deployer', 'user': user}],
            'contexts': [{'name': 'web', 'context': {'cluster': 'prod', 'user': 'deployer'}}]}


TOKEN_USER = {'token': TOKEN, 'client-certificate-data': base64.b64encode(CERT).decode(),
              'client-key-data': base64.b64encode(KEY).decode()}
# ansible-core 2.18 (the oldest supported): no controller mode in module_utils, masking in no defined order
CORE_2_18 = not hasattr(ansible_internal, 'is_controller')
INSECURE = {'insecure-skip-tls-verify': True, 'proxy-url': 'http://proxy-user:PROXY-SECRET@proxy.example:3128'}


@pytest.fixture
def harness(monkeypatch, tmp_path):
    """run(args) -> (result, syslog lines, the fake cluster, the settings the module connected with): main() of
    inplace_image with ``args``, its syslog/journald calls captured, the API a FakeCluster (the connection
    settings are still made from the auth options), the temporary directory empty at the start."""
    logged = []
    fake_syslog = types.SimpleNamespace(LOG_USER=8, LOG_INFO=6, openlog=lambda *args: None,
                                        syslog=lambda priority, message: logged.append(message))
    monkeypatch.setattr(basic, 'HAS_SYSLOG', True)
    monkeypatch.setattr(basic, 'has_journal', False)
    monkeypatch.setattr(basic, 'syslog', fake_syslog, raising=False)
    monkeypatch.setattr(tempfile, 'tempdir', str(tmp_path))
    for name in ('KUBECONFIG', 'K8S_AUTH_KUBECONFIG', 'HTTPS_PROXY', 'https_proxy', 'NO_PROXY', 'no_proxy'):
        monkeypatch.delenv(name, raising=False)
    cluster = FakeCluster([load('pod_web.json')])
    connected = []

    def connect(connection, pool_size=10):
        connected.append(client.configuration_from_params(connection.settings()))
        return cluster
    monkeypatch.setattr(client.Kube, 'connect', classmethod(lambda cls, connection, pool_size=10:
                                                            connect(connection, pool_size)))

    # as in a module process of its own: warnings go to the result (not to a controller's display), and the
    # module's start-up patch of zipimport (module_utils/startup.py) is undone afterwards
    monkeypatch.setattr(ansible_internal, 'is_controller', False, raising=False)   # 2.19+; 2.18 has no controller mode
    monkeypatch.setattr(zipimport, '_get_module_code', zipimport._get_module_code)
    from ansible_collections.inplace.k8s.plugins.modules import inplace_image

    def run(args, capsys=None):
        # each run starts with no warnings (a dict from 2.19, a list before)
        monkeypatch.setattr(ansible_warnings, '_global_warnings', type(ansible_warnings._global_warnings)())
        with module_args(args, invocation=True):
            with pytest.raises(SystemExit):
                inplace_image.main()
        out = capsys.readouterr().out
        return json.loads(out[out.index('{'):]), logged, cluster, connected
    return run


def image_args(**auth):
    return dict(auth, namespace='shop', name='web-0', containers={'app': 'registry.example/web:2'}, wait=False)


def warnings_of(result):
    """The texts of a result's warnings (ansible-core 2.19+ sends each as a summary with its event)."""
    return [w['event']['msg'] if isinstance(w, dict) else w for w in result.get('warnings') or []]


def assert_nothing_secret(*things):
    text = json.dumps(things, default=str)
    for secret in SECRETS:
        assert secret not in text


def test_a_kubeconfig_text_works_and_never_leaves(harness, capsys, tmp_path):
    text = yaml.safe_dump(kubeconfig(TOKEN_USER, INSECURE))
    result, logged, cluster, connected = harness(image_args(kubeconfig=text), capsys)
    assert result.get('failed') is not True and result['changed'], result
    settings = connected[0]
    assert settings.auth_headers() == {'authorization': 'Bearer ' + TOKEN}
    assert settings.proxy == INSECURE['proxy-url']
    with open(settings.key_file, 'rb') as stream:
        assert stream.read() == KEY
    assert list(tmp_path.iterdir()) == []   # the key copies live in memory only
    # syslog got AnsibleModule's line, without the kubeconfig (and its masking leaves the rest readable)
    invoked = [line for line in logged if 'Invoked with' in line]
    assert len(invoked) == 1 and 'kubeconfig=NOT_LOGGING_PARAMETER' in invoked[0] and 'name=web-0' in invoked[0]
    assert result['invocation']['module_args']['kubeconfig'] == 'VALUE_SPECIFIED_IN_NO_LOG_PARAMETER'
    # TLS verification off: said once, naming what turned it off
    insecure = [w for w in warnings_of(result) if 'TLS verification' in w]
    assert insecure == ['TLS verification of the API server https://api.example:6443 is off (insecure-skip-tls-verify '
                        'of cluster prod): anyone on the path can read and change the traffic, credentials included; '
                        'give the cluster CA (ca_cert, or certificate-authority-data in the kubeconfig) instead']
    assert_nothing_secret(result, logged, getattr(cluster, 'kube_events', {}))
    assert text not in json.dumps([result, logged])


@pytest.mark.parametrize('text, message', [
    (yaml.safe_dump(kubeconfig(TOKEN_USER, context='missing')),
     'cannot load the Kubernetes configuration from the kubeconfig text (KubeconfigError: context missing not found '
     '(contexts: web)); give a valid kubeconfig file, or host with api_key or client_cert/client_key'),
    ('users:\n- name: u\n  user: {token: %s\n  password: %s\n' % (TOKEN, PASSWORD),
     'cannot load the Kubernetes configuration from the kubeconfig text (KubeconfigError: the kubeconfig text is '
     'not valid YAML: '),
    ('- token: %s\n- password: %s\n' % (TOKEN, PASSWORD),
     'cannot load the Kubernetes configuration from the kubeconfig text (KubeconfigError: the kubeconfig text must be '
     'a mapping, not list)'),
])
def test_a_kubeconfig_text_that_cannot_work_is_refused_without_its_content(harness, capsys, text, message):
    result, logged, _cluster, connected = harness(image_args(kubeconfig=text), capsys)
    assert result['failed'] and result['msg'].startswith(message) and not connected
    assert_nothing_secret(result, logged)


def test_a_kubeconfig_dict_masks_exec_env_args_and_proxy_credentials(harness, capsys, tmp_path):
    plugin = tmp_path.parent / 'plugin.py'
    plugin.write_text('import json, os, sys\n'
                      'assert os.environ["API_SECRET"] == "ENV-SECRET" and sys.argv[2] == "--token=ARG-SECRET"\n'
                      'print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": '
                      '"ExecCredential", "status": {"token": "%s"}}))\n' % TOKEN)
    document = kubeconfig({'exec': {
        'apiVersion': 'client.authentication.k8s.io/v1beta1', 'command': sys.executable, 'interactiveMode': 'Never',
        'args': [str(plugin), '--region', '--token=ARG-SECRET'],
        'env': [{'name': 'API_SECRET', 'value': 'ENV-SECRET'}]}}, INSECURE)
    result, logged, _cluster, connected = harness(image_args(kubeconfig=document), capsys)
    assert result.get('failed') is not True and connected[0].auth_headers() == {'authorization': 'Bearer ' + TOKEN}
    shown = result['invocation']['module_args']['kubeconfig']
    # the dict stays readable in the -vvv invocation, its secrets masked
    assert shown['clusters'][0]['name'] == 'prod' and shown['users'][0]['user']['exec']['args'][1] == '--region'
    # The user-info and its password are both masked values: ansible-core 2.19+ replaces the longer first (the whole
    # user-info goes); 2.18 replaces them in a set's order (hash-seeded), so the user name may stay. The password
    # never shows in either.
    assert shown['clusters'][0]['cluster']['proxy-url'] in (
        ('http://********@proxy.example:3128',) if not CORE_2_18 else
        ('http://********@proxy.example:3128', 'http://proxy-user:********@proxy.example:3128'))
    assert list(tmp_path.iterdir()) == []
    assert_nothing_secret(result, logged)


def test_a_failure_with_a_kubeconfig_dict_names_entries_not_values(harness, capsys):
    document = kubeconfig({'username': 'admin', 'password': PASSWORD}, context='nope')
    result, logged, _cluster, _connected = harness(image_args(kubeconfig=document), capsys)
    assert result['failed'] and 'context nope not found (contexts: web)' in result['msg']
    assert_nothing_secret(result, logged)


@pytest.mark.parametrize('proxy', ['http://proxy-user:PROXY-SECRET@[bad', 'ftp://proxy-user:PROXY-SECRET@p:21'])
def test_a_proxy_option_that_cannot_work_is_refused_without_its_password(harness, capsys, proxy):
    result, logged, _cluster, _connected = harness(image_args(host='https://api.example', api_key=TOKEN, proxy=proxy),
                                                   capsys)
    assert result['failed'] and result['msg'].startswith('proxy: ') and '***@' in result['msg']
    assert [line for line in logged if 'proxy=NOT_LOGGING_PARAMETER' in line]
    assert_nothing_secret(result, logged)


def test_validate_certs_false_is_warned_of_once_per_run(harness, capsys):
    args = image_args(host='https://api.example', api_key=TOKEN, validate_certs=False)
    for _run in range(2):   # a second run in the same process (a test) warns again: once per run
        result, _logged, _cluster, connected = harness(args, capsys)
        assert [w for w in warnings_of(result) if 'TLS verification' in w] == [
            'TLS verification of the API server https://api.example is off (validate_certs=false): anyone on the path '
            'can read and change the traffic, credentials included; give the cluster CA (ca_cert, or '
            'certificate-authority-data in the kubeconfig) instead']
    assert len(connected) == 2


def test_a_kubeconfig_path_is_named_in_messages(harness, capsys):
    result, logged, _cluster, _connected = harness(image_args(kubeconfig='/nonexistent/kubeconfig'), capsys)
    assert result['failed'] and result['msg'] == 'kubeconfig /nonexistent/kubeconfig does not exist'
    assert result['invocation']['module_args']['kubeconfig'] == '/nonexistent/kubeconfig'
    assert [line for line in logged if 'kubeconfig=NOT_LOGGING_PARAMETER' in line]
