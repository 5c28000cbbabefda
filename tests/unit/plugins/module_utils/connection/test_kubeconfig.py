# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubeconfig.py: connection settings from kubeconfig files / dicts, the in-cluster service account and
explicit options, without the kubernetes package (except for exec / auth-provider users)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import copy
import json
import os
import stat
import subprocess
import sys
import tempfile
import textwrap

import pytest
import urllib3

from ansible_collections.inplace.k8s.plugins.module_utils.connection import client, kubeconfig
from ansible_collections.inplace.k8s.plugins.module_utils.connection import settings as connection_settings
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ConfigError
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.connection.kubeconfigs import SERVER, config, exec_kubeconfig, write

CA = b'-----BEGIN CERTIFICATE-----\nMIIBcertificateauthority\n-----END CERTIFICATE-----\n'
CERT = b'-----BEGIN CERTIFICATE-----\nMIIBclientcertificate\n-----END CERTIFICATE-----\n'
KEY = b'-----BEGIN EC PRIVATE KEY-----\nMHcsecretkeymaterial\n-----END EC PRIVATE KEY-----\n'
SOURCE_DEFAULT = 'kubeconfig from K8S_AUTH_KUBECONFIG/KUBECONFIG/~/.kube/config'


def b64(data):
    return base64.b64encode(data).decode('ascii')


def load(params):
    return kubeconfig.settings_from_params(params)


def load_error(params):
    with pytest.raises(ConfigError) as caught:
        load(params)
    return caught.value.msg


# --------------------------------------------------------------------------- kubeconfig shapes

SHAPES = [
    # (id, cluster fields, user fields, expected {attribute: value}, expected Authorization header)
    ('token', {}, {'token': 'tok-1'}, {'verify_ssl': True, 'ssl_ca_cert': None}, 'Bearer tok-1'),
    ('basic auth', {}, {'username': 'u', 'password': 'p'}, {}, 'Basic dTpw'),
    ('no credentials', {}, {}, {}, None),
    ('insecure', {'insecure-skip-tls-verify': True}, {'token': 't'}, {'verify_ssl': False}, 'Bearer t'),
    ('secure explicitly', {'insecure-skip-tls-verify': False}, {}, {'verify_ssl': True}, None),
    ('tls-server-name', {'tls-server-name': 'kubernetes.default'}, {},
     {'tls_server_name': 'kubernetes.default'}, None),
    ('proxy-url', {'proxy-url': 'http://proxy.example:3128'}, {}, {'proxy': 'http://proxy.example:3128'}, None),
    ('CA data', {'certificate-authority-data': b64(CA)}, {}, {'ca_cert_data': CA.decode(), 'ssl_ca_cert': None},
     None),
    ('http server', {'server': 'http://127.0.0.1:8080'}, {}, {'host': 'http://127.0.0.1:8080'}, None),
]


@pytest.mark.parametrize('cluster, user, expected, header', [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES])
def test_kubeconfig_shapes(clean_env, cluster, user, expected, header):
    settings = load({'kubeconfig': config(cluster, user)})
    assert settings.host == expected.pop('host', SERVER)
    for attribute, value in expected.items():
        assert getattr(settings, attribute) == value, attribute
    assert client.auth_headers(settings).get('authorization') == header


def test_client_certificate_data_goes_to_private_files_in_memory(clean_env, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, 'tempdir', str(tmp_path))
    settings = load({'kubeconfig': config({'certificate-authority-data': b64(CA)},
                                          {'client-certificate-data': b64(CERT), 'client-key-data': b64(KEY)})})
    for path, content in ((settings.cert_file, CERT), (settings.key_file, KEY)):
        assert path.startswith('/proc/self/fd/') and stat.S_IMODE(os.stat(path).st_mode) == 0o600
        with open(path, 'rb') as stream:
            assert stream.read() == content
    assert os.listdir(str(tmp_path)) == []   # nothing on disk


def test_file_references_are_relative_to_the_kubeconfig(clean_env, tmp_path):
    (tmp_path / 'pki').mkdir()
    for name, content in (('ca.crt', CA), ('client.crt', CERT), ('client.key', KEY), ('token', b'file-token\n')):
        (tmp_path / 'pki' / name).write_bytes(content)
    path = write(tmp_path / 'config', config(
        {'certificate-authority': 'pki/ca.crt'},
        {'client-certificate': 'pki/client.crt', 'client-key': str(tmp_path / 'pki' / 'client.key'),
         'tokenFile': 'pki/token'}))
    settings = load({'kubeconfig': path})
    assert settings.ssl_ca_cert == str(tmp_path / 'pki' / 'ca.crt')
    assert settings.cert_file == str(tmp_path / 'pki' / 'client.crt')
    assert settings.key_file == str(tmp_path / 'pki' / 'client.key')
    assert client.auth_headers(settings) == {'authorization': 'Bearer file-token'}


def test_certificate_authority_data_wins_over_the_file_as_in_kubectl(clean_env):
    settings = load({'kubeconfig': config({'certificate-authority-data': b64(CA),
                                           'certificate-authority': '/nonexistent/ca.crt'})})
    assert settings.ca_cert_data == CA.decode() and settings.ssl_ca_cert is None


class Clock(object):
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_token_file_is_read_again_when_it_changes_and_every_minute(tmp_path):
    path = tmp_path / 'token'
    path.write_text('one\n')
    clock = Clock()
    token = connection_settings.TokenFile(str(path), clock=clock)
    assert token() == 'Bearer one'
    path.write_text('two-longer\n')                 # rotated: another size, mtime
    assert token() == 'Bearer two-longer'
    os.remove(str(path))                            # unreadable for a while: the last token stays
    clock.now += 61
    assert token() == 'Bearer two-longer'
    path.write_text('three\n')
    assert token() == 'Bearer three'


def test_token_file_falls_back_to_the_token_and_needs_one_of_them(tmp_path):
    missing = str(tmp_path / 'missing')
    assert connection_settings.TokenFile(missing, token='static')() == 'Bearer static'
    with pytest.raises(connection_settings.KubeconfigError, match='token file .*missing: No such file'):
        connection_settings.TokenFile(missing)
    (tmp_path / 'empty').write_text('\n')
    with pytest.raises(connection_settings.KubeconfigError, match='is empty'):
        connection_settings.TokenFile(str(tmp_path / 'empty'))


def test_token_file_beside_a_token_wins(clean_env, tmp_path):
    (tmp_path / 'token').write_text('from-file')
    settings = load({'kubeconfig': write(tmp_path / 'config', config(user={'token': 'inline',
                                                                           'tokenFile': 'token'}))})
    assert client.auth_headers(settings)['authorization'] == 'Bearer from-file'


# --------------------------------------------------------------------------- contexts, merging

def two_contexts():
    document = config({}, {'token': 'one'}, name='one')
    document['current-context'] = 'one'
    other = config({'server': 'https://two.example:6443'}, {'token': 'two'}, name='two')
    for section in ('clusters', 'users', 'contexts'):
        document[section] += other[section]
    return document


@pytest.mark.parametrize('context, host, header', [
    (None, SERVER, 'Bearer one'), ('two', 'https://two.example:6443', 'Bearer two')])
def test_context_selection(clean_env, context, host, header):
    settings = load({'kubeconfig': two_contexts(), 'context': context})
    assert (settings.host, client.auth_headers(settings)['authorization']) == (host, header)


def test_kubeconfig_files_merge_as_kubectl_does(monkeypatch, clean_env, tmp_path):
    (tmp_path / 'a').mkdir()
    (tmp_path / 'b').mkdir()
    (tmp_path / 'b' / 'ca.crt').write_bytes(CA)
    first = config({'server': 'https://first.example'}, {'token': 'first'}, name='shared', current='shared')
    first['contexts'].append({'name': 'other', 'context': {'cluster': 'c-other', 'user': 'u-shared'}})
    second = config({'server': 'https://ignored.example'}, {'token': 'ignored'}, name='shared', current='other')
    second['clusters'].append({'name': 'c-other', 'cluster': {'server': 'https://other.example',
                                                              'certificate-authority': 'ca.crt'}})
    paths = [write(tmp_path / 'a' / 'config', first), str(tmp_path / 'missing'),
             write(tmp_path / 'b' / 'config', second)]
    monkeypatch.setenv('KUBECONFIG', os.pathsep.join(paths))
    settings = load({})        # the first file's current-context, cluster and user win
    assert (settings.host, client.auth_headers(settings)['authorization']) == ('https://first.example', 'Bearer first')
    settings = load({'context': 'other'})    # a cluster of the second file: its paths are relative to it
    assert (settings.host, settings.ssl_ca_cert) == ('https://other.example', str(tmp_path / 'b' / 'ca.crt'))


def test_an_empty_file_in_kubeconfig_is_skipped(monkeypatch, clean_env, tmp_path):
    monkeypatch.setenv('KUBECONFIG', os.pathsep.join([write(tmp_path / 'empty', ''),
                                                      write(tmp_path / 'config', config(user={'token': 't'}))]))
    assert load({}).host == SERVER


def test_host_alone_ignores_the_default_kubeconfig(monkeypatch, clean_env, tmp_path):
    monkeypatch.setenv('KUBECONFIG', write(tmp_path / 'config', config(user={'token': 'kube'})))
    settings = load({'host': 'https://h.example', 'api_key': 'x'})
    assert settings.host == 'https://h.example' and settings.auth_headers()['authorization'] == 'Bearer x'
    assert load({}).host == SERVER


# --------------------------------------------------------------------------- errors name, never echo

ERRORS = [
    ('missing context', {'context': 'nope'}, 'context nope not found (contexts: ctx)'),
    ('no current-context', {'current': None}, 'no current-context in the kubeconfig: set context'),
    ('missing cluster', {'clusters': []}, 'context ctx: cluster c-ctx not found'),
    ('missing user', {'users': []}, 'context ctx: user u-ctx not found'),
    ('clusters not a list', {'clusters': 'this is not a kubeconfig'}, 'clusters must be a list, not str'),
    ('entry without name', {'users': [{'user': {'token': 'secret-token'}}]}, 'users[0] has no name'),
    ('duplicate name', {'clusters': [{'name': 'c-ctx', 'cluster': {'server': SERVER}}] * 2},
     'cluster c-ctx is listed twice'),
    ('user not a mapping', {'users': [{'name': 'u-ctx', 'user': 'secret-token'}]}, 'user u-ctx must be a mapping, not str'),
    ('token not a string', {'user': {'token': 12345}}, 'token of user u-ctx must be a string, not int'),
    ('insecure not a bool', {'cluster': {'insecure-skip-tls-verify': 'false'}},
     'insecure-skip-tls-verify of cluster c-ctx must be true or false'),
    ('bad base64', {'user': {'client-key-data': 'secret-token!!'}}, 'client-key-data of user u-ctx is not base64'),
    ('not PEM', {'cluster': {'certificate-authority-data': b64(b'secret-token')}},
     'certificate-authority-data of cluster c-ctx is not PEM'),
    ('missing file', {'cluster': {'certificate-authority': '/nonexistent/ca.crt'}},
     'certificate-authority of cluster c-ctx: /nonexistent/ca.crt does not exist'),
    ('missing token file', {'user': {'tokenFile': '/nonexistent/token'}},
     'token file /nonexistent/token: No such file or directory'),
]


@pytest.mark.parametrize('change, detail', [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_invalid_kubeconfigs_are_named_not_echoed(clean_env, change, detail):
    change = copy.deepcopy(change)
    document = config(change.pop('cluster', None), change.pop('user', {'token': 'secret-token'}),
                      current=change.pop('current', 'ctx'))
    context = change.pop('context', None)
    document.update(change)
    message = load_error({'kubeconfig': document, 'context': context})
    assert message == ('cannot load the Kubernetes configuration from the kubeconfig dict (KubeconfigError: %s); '
                       'give a valid kubeconfig file, or host with api_key or client_cert/client_key' % detail)
    assert 'secret-token' not in message


@pytest.mark.parametrize('text, detail', [
    ('clusters: [\nusers:\n  token: secret-token\n', 'line 3, column 8'),
    ('users:\n- name: u\n  user: {token: "secret-token\n', 'line 4, column 1'),
    ('\tkey: secret-token\n', 'line 1, column 1'),
])
def test_invalid_yaml_is_named_by_place(clean_env, tmp_path, text, detail):
    path = write(tmp_path / 'config', text)
    message = load_error({'kubeconfig': path})
    assert message.startswith('cannot load the Kubernetes configuration from kubeconfig %s (KubeconfigError: '
                              '%s is not valid YAML: ' % (path, path))
    assert detail in message and 'secret-token' not in message


def test_not_a_mapping(clean_env, tmp_path):
    assert 'KubeconfigError: a kubeconfig must be a mapping, not list' in load_error(
        {'kubeconfig': write(tmp_path / 'config', '- a\n- b\n')})


def test_a_missing_file_and_a_wrong_type_keep_their_messages(clean_env):
    assert load_error({'kubeconfig': '/nonexistent/kubeconfig'}) == 'kubeconfig /nonexistent/kubeconfig does not exist'
    assert load_error({'kubeconfig': 5}) == ('kubeconfig must be a file path or a dict (the parsed kubeconfig), or the '
                                             'kubeconfig text, not int')


def test_nothing_configured(clean_env):
    assert load_error({}) == 'no Kubernetes API server: set kubeconfig, host or K8S_AUTH_* variables'


def test_a_context_without_any_kubeconfig_file(clean_env):
    assert load_error({'context': 'x'}).startswith(
        'cannot load the Kubernetes configuration from %s (KubeconfigError: no kubeconfig file: ' % SOURCE_DEFAULT)


def test_an_error_in_one_of_several_files_names_that_file(monkeypatch, clean_env, tmp_path):
    good = write(tmp_path / 'good', config(user={'token': 't'}))
    bad = write(tmp_path / 'bad', {'users': 'secret-token'})
    monkeypatch.setenv('KUBECONFIG', os.pathsep.join([good, bad]))
    message = load_error({})
    assert '(KubeconfigError: %s: users must be a list, not str)' % bad in message and SOURCE_DEFAULT in message


# --------------------------------------------------------------------------- in-cluster

@pytest.fixture
def service_account(monkeypatch, clean_env, tmp_path):
    monkeypatch.setattr(kubeconfig, 'SERVICE_ACCOUNT_DIR', str(tmp_path))
    monkeypatch.setenv('KUBERNETES_SERVICE_HOST', '10.96.0.1')
    monkeypatch.setenv('KUBERNETES_SERVICE_PORT', '443')
    (tmp_path / 'token').write_text('sa-token')
    (tmp_path / 'ca.crt').write_bytes(CA)
    return tmp_path


def test_in_cluster(service_account):
    settings = load({})
    assert settings.host == 'https://10.96.0.1:443'
    assert settings.ssl_ca_cert == str(service_account / 'ca.crt') and settings.verify_ssl
    assert isinstance(settings.authorization, connection_settings.TokenFile)
    assert client.auth_headers(settings) == {'authorization': 'Bearer sa-token'}


def test_in_cluster_ipv6(monkeypatch, service_account):
    monkeypatch.setenv('KUBERNETES_SERVICE_HOST', 'fd00::1')
    assert load({}).host == 'https://[fd00::1]:443'


@pytest.mark.parametrize('remove, detail', [
    ('token', 'token file %s/token: No such file or directory'),
    ('ca.crt', 'the service account CA %s/ca.crt is missing or empty')])
def test_in_cluster_errors(service_account, remove, detail):
    os.remove(str(service_account / remove))
    assert load_error({}) == ('cannot load the Kubernetes configuration from the in-cluster service account '
                              '(KubeconfigError: %s); give a valid kubeconfig file, or host with api_key or '
                              'client_cert/client_key' % (detail % service_account))


def test_default_kubeconfig_before_in_cluster(monkeypatch, service_account, tmp_path):
    monkeypatch.setenv('KUBECONFIG', write(tmp_path / 'config', config(user={'token': 't'})))
    assert load({}).host == SERVER


# --------------------------------------------------------------------------- explicit options

def test_explicit_options_override_the_kubeconfig(clean_env):
    settings = load({
        'kubeconfig': config({'certificate-authority-data': b64(CA), 'insecure-skip-tls-verify': False,
                              'proxy-url': 'http://kubeconfig-proxy:3128'}, {'token': 'kube'}),
        'host': 'https://three.example', 'username': 'u', 'password': 'p', 'validate_certs': False,
        'ca_cert': '/ca.pem', 'client_cert': '/c.pem', 'client_key': '/k.pem', 'proxy': 'http://proxy:3128',
        'no_proxy': 'localhost', 'proxy_headers': {'proxy_basic_auth': 'pu:pp', 'user_agent': None}})
    assert (settings.host, settings.verify_ssl, settings.ssl_ca_cert, settings.ca_cert_data, settings.cert_file,
            settings.key_file, settings.proxy, settings.no_proxy) == (
        'https://three.example', False, '/ca.pem', None, '/c.pem', '/k.pem', 'http://proxy:3128', 'localhost')
    assert settings.proxy_headers == {'proxy-authorization': 'Basic cHU6cHA='}
    assert client.auth_headers(settings) == {'authorization': 'Basic dTpw'}


def test_api_key_replaces_a_token_file(service_account):
    assert client.auth_headers(load({'api_key': 'given'})) == {'authorization': 'Bearer given'}


def test_environment_proxy(monkeypatch, clean_env):
    monkeypatch.setenv('HTTPS_PROXY', 'http://env-proxy:3128')
    monkeypatch.setenv('NO_PROXY', '.internal')
    settings = load({'host': 'https://api.example'})
    assert (settings.proxy, settings.proxy_source, settings.no_proxy) == ('http://env-proxy:3128', 'HTTPS_PROXY', None)
    assert load({'host': 'https://api.internal'}).proxy is None
    assert load({'host': 'https://api.example', 'proxy': 'http://given:1'}).proxy == 'http://given:1'
    assert load({'kubeconfig': config({'proxy-url': 'http://kube:1'})}).proxy == 'http://kube:1'


# --------------------------------------------------------------------------- the pool (the proxy rules: test_proxy.py)

def test_pool_tls_arguments(clean_env):
    settings = load({'kubeconfig': config({'certificate-authority-data': b64(CA),
                                           'tls-server-name': 'kubernetes.default'},
                                          {'client-certificate-data': b64(CERT), 'client-key-data': b64(KEY)})})
    kube = client.Kube(settings, pool_size=20)
    pool = kube._transport.pool
    assert isinstance(pool, urllib3.HTTPSConnectionPool) and pool.host == urllib3.util.parse_url(SERVER).host
    # 20 workers share 16 connections (+2 for watches) and wait for a free one rather than open more
    assert (pool.pool.maxsize, pool.block, pool.cert_reqs, pool.conn_kw['ca_cert_data'], pool.ca_certs) == (
        18, True, 'CERT_REQUIRED', CA.decode(), None)
    assert pool.conn_kw['server_hostname'] == 'kubernetes.default'
    assert (pool.cert_file, pool.key_file) == (settings.cert_file, settings.key_file)


@pytest.mark.parametrize('params, proxied', [
    ({'proxy': 'http://proxy:3128', 'proxy_headers': {'proxy_basic_auth': 'a:b'}}, True),
    ({'proxy': 'http://proxy:3128', 'no_proxy': 'api.example'}, False),
    ({'validate_certs': False}, False)])
def test_pool_proxy(clean_env, params, proxied):
    settings = load(dict({'host': 'https://api.example', 'api_key': 't'}, **params))
    pool = client.Kube(settings)._transport.pool
    assert isinstance(pool, urllib3.ProxyManager) is proxied
    if proxied:
        assert pool.proxy.url == 'http://proxy:3128' and pool.proxy_headers == {'proxy-authorization': 'Basic YTpi'}
        cert_reqs = pool.connection_pool_kw['cert_reqs']
    else:
        assert isinstance(pool, urllib3.HTTPSConnectionPool)
        cert_reqs = pool.cert_reqs
    assert cert_reqs == ('CERT_NONE' if params.get('validate_certs') is False else 'CERT_REQUIRED')


# --------------------------------------------------------------------------- the kubernetes package

def test_api_client_gets_an_equivalent_configuration(clean_env, tmp_path):
    token = tmp_path / 'token'
    token.write_text('first')
    settings = load({'kubeconfig': config({'certificate-authority-data': b64(CA), 'tls-server-name': 'k8s',
                                           'proxy-url': 'http://proxy:3128'},
                                          {'client-certificate-data': b64(CERT), 'client-key-data': b64(KEY),
                                           'tokenFile': str(token)}), 'no_proxy': 'localhost',
                     'impersonate_user': 'alice', 'impersonate_groups': ['g1']})
    kube = client.Kube(settings, pool_size=4)
    api = kube.api_client()
    cfg = api.configuration
    assert (cfg.host, cfg.verify_ssl, cfg.cert_file, cfg.key_file, cfg.tls_server_name, cfg.proxy, cfg.no_proxy,
            cfg.connection_pool_maxsize) == (SERVER, True, settings.cert_file, settings.key_file, 'k8s',
                                             'http://proxy:3128', 'localhost', 6)
    with open(cfg.ssl_ca_cert, 'rb') as stream:
        assert stream.read() == CA
    assert cfg.auth_settings()['BearerToken']['value'] == 'Bearer first'
    token.write_text('second-token')      # the websocket asks again: the rotated token
    assert cfg.auth_settings()['BearerToken']['value'] == 'Bearer second-token'
    assert api.default_headers['Impersonate-User'] == 'alice'
    assert api.default_headers['Impersonate-Group'] == 'g1'


def test_api_client_refuses_what_one_value_per_header_cannot_say(clean_env):
    """The kubernetes ApiClient keeps one value per header: two groups would be joined into one group."""
    settings = load({'host': SERVER, 'impersonate_user': 'alice', 'impersonate_groups': ['g1', 'g2']})
    with pytest.raises(ConfigError, match='one value per header'):
        client.Kube(settings).api_client()


def test_exec_plugins_run_through_the_kubernetes_loader(clean_env, tmp_path):
    settings = load({'kubeconfig': write(tmp_path / 'config', exec_kubeconfig(tmp_path))})
    assert (settings.host, settings.verify_ssl) == (SERVER, False)
    assert client.auth_headers(settings) == {'authorization': 'Bearer exec-token'}
    settings = load({'kubeconfig': exec_kubeconfig(tmp_path), 'api_key': 'given'})   # a dict too; options win
    assert client.auth_headers(settings) == {'authorization': 'Bearer given'}


def test_auth_providers_run_through_the_kubernetes_loader_with_persist_config(clean_env, tmp_path, monkeypatch):
    from kubernetes import config as kube_config
    path = write(tmp_path / 'config', config(user={'auth-provider': {'name': 'oidc', 'config': {}}}))
    seen = []

    def loader(**kwargs):
        seen.append((kwargs['config_file'], kwargs['persist_config']))
        kwargs['client_configuration'].host = 'https://one.example:6443'
        kwargs['client_configuration'].api_key = {'BearerToken': 'Bearer provider-token'}
    monkeypatch.setattr(kube_config, 'load_kube_config', loader)
    settings = load({'kubeconfig': path, 'persist_config': True})
    assert settings.host == 'https://one.example:6443'
    assert client.auth_headers(settings) == {'authorization': 'Bearer provider-token'}
    load({'kubeconfig': path})
    assert seen == [(path, True), (path, False)]


def test_kubernetes_loader_errors_keep_the_message(clean_env, tmp_path, monkeypatch):
    from kubernetes import config as kube_config

    def loader(**kwargs):
        raise kube_config.ConfigException('Invalid kube-config file. Expected key name in %s/t' % path)
    monkeypatch.setattr(kube_config, 'load_kube_config', loader)
    path = write(tmp_path / 'config', exec_kubeconfig(tmp_path))
    assert load_error({'kubeconfig': path}) == (
        'cannot load the Kubernetes configuration from kubeconfig %s (ConfigException: Invalid kube-config file. '
        'Expected key name in %s/t); give a valid kubeconfig file, or host with api_key or client_cert/client_key'
        % (path, path))


def test_common_kubeconfigs_never_import_kubernetes(tmp_path):
    """Start-up: the module's import chain and a token or certificate kubeconfig load without the
    kubernetes package (it costs a third of a second)."""
    path = write(tmp_path / 'config', config({'certificate-authority-data': b64(CA)},
                                             {'client-certificate-data': b64(CERT), 'client-key-data': b64(KEY),
                                              'token': 't'}))
    script = textwrap.dedent('''\
        import sys
        from ansible_collections.inplace.k8s.plugins.modules import inplace_image, inplace_resize, container_recreate
        from ansible_collections.inplace.k8s.plugins.module_utils import options
        from ansible_collections.inplace.k8s.plugins.module_utils.connection import client
        kube = client.Kube.connect(options.Connection(kubeconfig=%r))
        assert kube.host == %r, kube.host
        print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'kubernetes')))
    ''' % (path, SERVER)).replace('import sys', 'import json, sys')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    output = subprocess.check_output([sys.executable, '-c', script], env=env, cwd=str(tmp_path))
    assert json.loads(output) == []
