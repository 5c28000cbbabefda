# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Conformance of our kubeconfig loader (kubeconfig.py) with the kubernetes package's: the same
kubeconfigs (tokens, token files, basic auth, client certificates, CA data and files, proxies,
tls-server-name, insecure clusters, several files merged, context selection, the in-cluster service
account) give the same server, the same TLS settings (verification, CA, client certificate and key
compared by content, server name), the same proxy and the same Authorization header.

The certificates are made here (cryptography), so the files are real PEM."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import datetime
import os

import pytest
import yaml

# Not skipped when missing: cryptography comes with ansible-core, kubernetes is in requirements.txt.
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.config import incluster_config

from ansible_collections.inplace.k8s.plugins.module_utils.connection import kubeconfig

SERVER = 'https://127.0.0.1:6443'


def _name(common_name):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificate(subject, issuer, key, signing_key, ca):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer)) \
        .public_key(key.public_key()).serial_number(x509.random_serial_number()) \
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1)) \
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    return builder.sign(signing_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


@pytest.fixture(scope='module')
def pki():
    """{ca, cert, key}: PEM bytes of a CA and a client certificate it signed, with its key."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    client_key = ec.generate_private_key(ec.SECP256R1())
    return {
        'ca': _certificate('test-ca', 'test-ca', ca_key, ca_key, True),
        'cert': _certificate('system:admin', 'test-ca', client_key, ca_key, False),
        'key': client_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                        serialization.NoEncryption()),
    }


@pytest.fixture
def env(clean_env, tmp_path):
    """The test's directory, in clean_env (connection/conftest.py: no default kubeconfig, no in-cluster
    environment, no proxy variables)."""
    return tmp_path


def b64(data):
    return base64.b64encode(data).decode('ascii')


def document(cluster, user, name='ctx', current='ctx', server=SERVER):
    return {'apiVersion': 'v1', 'kind': 'Config', 'current-context': current,
            'clusters': [{'name': 'c-' + name, 'cluster': dict({'server': server}, **cluster)}],
            'users': [{'name': 'u-' + name, 'user': dict(user)}],
            'contexts': [{'name': name, 'context': {'cluster': 'c-' + name, 'user': 'u-' + name}}]}


def _content(path):
    if not path:
        return None
    with open(path, 'rb') as handle:
        return handle.read()


def ours(settings):
    """What a connection is made of, from our ConnectionSettings (the server as client.ApiClient uses it)."""
    ca = settings.ca_cert_data.encode() if settings.ca_cert_data else _content(settings.ssl_ca_cert)
    return {'server': settings.host.rstrip('/'), 'verify': settings.verify_ssl, 'ca': ca, 'cert': _content(settings.cert_file),
            'key': _content(settings.key_file), 'tls_server_name': settings.tls_server_name,
            'proxy': settings.proxy, 'authorization': _scheme(settings.auth_headers().get('authorization'))}


def official(cfg):
    """The same from the kubernetes package's Configuration."""
    header = (cfg.auth_settings().get('BearerToken') or {}).get('value')
    return {'server': cfg.host, 'verify': cfg.verify_ssl, 'ca': _content(cfg.ssl_ca_cert),
            'cert': _content(cfg.cert_file), 'key': _content(cfg.key_file),
            'tls_server_name': getattr(cfg, 'tls_server_name', None), 'proxy': cfg.proxy,
            'authorization': _scheme(header)}


def _scheme(header):
    """An Authorization header with its scheme in one case (schemes are case-insensitive, RFC 9110)."""
    if not header:
        return None
    scheme, _sep, value = header.partition(' ')
    return '%s %s' % (scheme.capitalize(), value)


def both_from_files(paths, context=None):
    """(ours, official) for the kubeconfig files ``paths`` merged (KUBECONFIG), with ``context``."""
    joined = os.pathsep.join(str(p) for p in paths)
    if len(paths) == 1:
        mine = kubeconfig.settings_from_params({'kubeconfig': str(paths[0]), 'context': context})
    else:
        mine = kubeconfig.settings_from_params({'context': context}, environ={'KUBECONFIG': joined})
    cfg = k8s_client.Configuration()
    k8s_config.load_kube_config(config_file=joined, context=context, client_configuration=cfg)
    return ours(mine), official(cfg)


def write(path, doc):
    path.write_text(yaml.safe_dump(doc))
    return path


def cases(pki, tmp):
    """(id, cluster fields, user fields, files to write {name: bytes}) of one-file kubeconfigs."""
    return [
        ('token', {'certificate-authority-data': b64(pki['ca'])}, {'token': 'tok-1'}, {}),
        ('basic auth', {'certificate-authority-data': b64(pki['ca'])}, {'username': 'admin', 'password': 's3cret'}, {}),
        ('token file', {'certificate-authority': 'ca.crt'}, {'tokenFile': 'token'}, {'ca.crt': pki['ca'], 'token': b'from-file'}),
        ('absolute token file', {'certificate-authority': str(tmp / 'ca.crt')},
         {'tokenFile': str(tmp / 'token')}, {'ca.crt': pki['ca'], 'token': b'absolute'}),
        ('client certificate data', {'certificate-authority-data': b64(pki['ca'])},
         {'client-certificate-data': b64(pki['cert']), 'client-key-data': b64(pki['key'])}, {}),
        ('client certificate files', {'certificate-authority': 'pki/ca.crt'},
         {'client-certificate': 'pki/client.crt', 'client-key': 'pki/client.key'},
         {'pki/ca.crt': pki['ca'], 'pki/client.crt': pki['cert'], 'pki/client.key': pki['key']}),
        ('CA data wins over the file', {'certificate-authority-data': b64(pki['ca']), 'certificate-authority': 'other.crt'},
         {'token': 't'}, {'other.crt': pki['cert']}),
        ('insecure', {'insecure-skip-tls-verify': True}, {'token': 't'}, {}),
        ('secure explicitly', {'insecure-skip-tls-verify': False, 'certificate-authority-data': b64(pki['ca'])}, {}, {}),
        ('tls-server-name', {'certificate-authority-data': b64(pki['ca']), 'tls-server-name': 'kubernetes.default.svc'},
         {'token': 't'}, {}),
        ('http proxy', {'certificate-authority-data': b64(pki['ca']), 'proxy-url': 'http://127.0.0.1:3128'},
         {'token': 't'}, {}),
        ('socks proxy', {'certificate-authority-data': b64(pki['ca']), 'proxy-url': 'socks5://127.0.0.1:1080'},
         {'token': 't'}, {}),
        ('no credentials', {'certificate-authority-data': b64(pki['ca'])}, {}, {}),
    ]


CASE_IDS = ['token', 'basic auth', 'token file', 'absolute token file', 'client certificate data',
            'client certificate files', 'CA data wins over the file', 'insecure', 'secure explicitly',
            'tls-server-name', 'http proxy', 'socks proxy', 'no credentials']


@pytest.mark.parametrize('case', CASE_IDS)
def test_one_kubeconfig_loads_as_the_kubernetes_package_loads_it(env, pki, case):
    _id, cluster, user, files = [c for c in cases(pki, env) if c[0] == case][0]
    for name, data in files.items():
        (env / name).parent.mkdir(parents=True, exist_ok=True)
        (env / name).write_bytes(data)
    path = write(env / 'config', document(cluster, user))
    mine, theirs = both_from_files([path])
    assert mine == theirs
    assert mine['server'] == SERVER


def test_a_server_with_a_trailing_slash(env, pki):
    path = write(env / 'config', document({'certificate-authority-data': b64(pki['ca'])}, {'token': 't'},
                                          server=SERVER + '/'))
    mine, theirs = both_from_files([path])
    assert mine == theirs and mine['server'] == SERVER


def test_the_case_list_is_complete(env, pki):
    assert [c[0] for c in cases(pki, env)] == CASE_IDS


def test_several_files_merge_as_the_kubernetes_package_merges_them(env, pki):
    (env / 'ca.crt').write_bytes(pki['ca'])
    first = {'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'dev',
             'contexts': [{'name': 'dev', 'context': {'cluster': 'dev', 'user': 'dev'}}],
             'clusters': [{'name': 'dev', 'cluster': {'server': 'https://127.0.0.2:6443',
                                                      'certificate-authority': 'ca.crt'}}],
             'users': [{'name': 'dev', 'user': {'token': 'dev-first'}}]}
    second = {'apiVersion': 'v1', 'kind': 'Config',
              'contexts': [{'name': 'prod', 'context': {'cluster': 'prod', 'user': 'prod'}},
                           {'name': 'dev', 'context': {'cluster': 'prod', 'user': 'prod'}}],
              'clusters': [{'name': 'prod', 'cluster': {'server': 'https://127.0.0.3:6443',
                                                        'certificate-authority-data': b64(pki['ca']),
                                                        'tls-server-name': 'prod.internal'}}],
              'users': [{'name': 'prod', 'user': {'client-certificate-data': b64(pki['cert']),
                                                  'client-key-data': b64(pki['key'])}},
                        {'name': 'dev', 'user': {'token': 'dev-second'}}]}
    paths = [write(env / 'first', first), write(env / 'second', second)]
    mine, theirs = both_from_files(paths)
    assert mine == theirs and mine['server'] == 'https://127.0.0.2:6443' and mine['authorization'] == 'Bearer dev-first'
    mine, theirs = both_from_files(paths, context='prod')
    assert mine == theirs and mine['server'] == 'https://127.0.0.3:6443' and mine['cert'] == pki['cert']
    assert mine['tls_server_name'] == 'prod.internal'
    # reversed, the dev context is the (now first) second file's: the first file that sets an entry wins
    mine, theirs = both_from_files(list(reversed(paths)), context='dev')
    assert mine == theirs and mine['server'] == 'https://127.0.0.3:6443' and mine['cert'] == pki['cert']
    assert mine['authorization'] is None


# ---- where the kubernetes package differs from kubectl (client-go), ours follows kubectl

def test_known_difference_current_context_of_several_files(env):
    """kubectl: the first file that sets current-context wins; the kubernetes package takes the last one."""
    first = document({}, {'token': 'a'}, name='a', current='a', server='https://127.0.0.2:6443')
    second = document({}, {'token': 'b'}, name='b', current='b', server='https://127.0.0.3:6443')
    mine, theirs = both_from_files([write(env / 'first', first), write(env / 'second', second)])
    assert mine['server'] == 'https://127.0.0.2:6443' and theirs['server'] == 'https://127.0.0.3:6443'


def test_known_difference_token_file_beside_a_token(env):
    """client-go: the tokenFile, read again periodically, takes precedence over token; the kubernetes
    package uses the inline token."""
    (env / 'token').write_text('from-file')
    mine, theirs = both_from_files([write(env / 'config', document(
        {'insecure-skip-tls-verify': True}, {'tokenFile': 'token', 'token': 'inline'}))])
    assert mine['authorization'] == 'Bearer from-file' and theirs['authorization'] == 'Bearer inline'
    assert dict(mine, authorization=None) == dict(theirs, authorization=None)


def test_the_in_cluster_service_account_loads_as_the_kubernetes_package_loads_it(monkeypatch, env, pki):
    account = env / 'serviceaccount'
    account.mkdir()
    (account / 'token').write_text('sa-token')
    (account / 'ca.crt').write_bytes(pki['ca'])
    monkeypatch.setattr(kubeconfig, 'SERVICE_ACCOUNT_DIR', str(account))
    for host in ('127.0.0.1', '::1'):
        environ = {'KUBERNETES_SERVICE_HOST': host, 'KUBERNETES_SERVICE_PORT': '6443'}
        mine = ours(kubeconfig.settings_from_params({}, environ=environ))
        cfg = k8s_client.Configuration()
        incluster_config.InClusterConfigLoader(token_filename=str(account / 'token'),
                                               cert_filename=str(account / 'ca.crt'), environ=environ).load_and_set(cfg)
        assert mine == official(cfg)
        assert mine['authorization'] == 'Bearer sa-token' and mine['ca'] == pki['ca']
