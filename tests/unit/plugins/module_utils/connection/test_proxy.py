# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which proxy reaches the API server, by kubectl's rules (client-go reads the environment through Go's
golang.org/x/net/http/httpproxy; a kubeconfig's proxy-url wins over it), and proxy URLs never shown with their
credentials: through the auth options (kubeconfig.settings_from_params) and the client (client.Kube)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import socket

import pytest
import urllib3

from ansible_collections.inplace.k8s.plugins.module_utils.connection import client, kubeconfig, proxy
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ConfigError, ValidationError

VARIABLES = ('HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'ALL_PROXY', 'all_proxy', 'NO_PROXY',
             'no_proxy', 'KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT')


def settings(params, environ):
    """The settings of ``params`` with only ``environ`` as the environment (no default kubeconfig)."""
    return kubeconfig.settings_from_params(params, dict(environ, KUBECONFIG='/nonexistent/kubeconfig'))


def kubeconfig_with(cluster):
    return {'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'x',
            'clusters': [{'name': 'c', 'cluster': dict({'server': 'https://api.example:6443'}, **cluster)}],
            'users': [{'name': 'u', 'user': {'token': 't'}}],
            'contexts': [{'name': 'x', 'context': {'cluster': 'c', 'user': 'u'}}]}


# --------------------------------------------------------------------------- the environment

@pytest.mark.parametrize('server, environ, expected', [
    # the variable of the server's scheme; upper case before lower case; an empty one counts as unset
    ('https://api.example', {'HTTPS_PROXY': 'http://up:1'}, ('http://up:1', 'HTTPS_PROXY')),
    ('https://api.example', {'https_proxy': 'http://low:1'}, ('http://low:1', 'https_proxy')),
    ('https://api.example', {'HTTPS_PROXY': 'http://up:1', 'https_proxy': 'http://low:1'}, ('http://up:1', 'HTTPS_PROXY')),
    ('https://api.example', {'HTTPS_PROXY': '', 'https_proxy': 'http://low:1'}, ('http://low:1', 'https_proxy')),
    ('https://api.example', {'HTTP_PROXY': 'http://plain:1'}, (None, None)),
    ('http://api.example', {'HTTP_PROXY': 'http://plain:1'}, ('http://plain:1', 'HTTP_PROXY')),
    ('http://api.example', {'HTTPS_PROXY': 'http://up:1'}, (None, None)),
    # ALL_PROXY is not read
    ('https://api.example', {'ALL_PROXY': 'http://all:1', 'all_proxy': 'http://all:2'}, (None, None)),
    # host[:port] without a scheme is http://; http, https and socks5 stay as they are
    ('https://api.example', {'HTTPS_PROXY': 'proxy.corp:3128'}, ('http://proxy.corp:3128', 'HTTPS_PROXY')),
    ('https://api.example', {'HTTPS_PROXY': 'https://proxy.corp'}, ('https://proxy.corp', 'HTTPS_PROXY')),
    ('https://api.example', {'HTTPS_PROXY': 'socks5://proxy.corp:1080'}, ('socks5://proxy.corp:1080', 'HTTPS_PROXY')),
    # loopback is never proxied
    ('https://localhost:6443', {'HTTPS_PROXY': 'http://p:1'}, (None, None)),
    ('https://127.0.0.1:6443', {'HTTPS_PROXY': 'http://p:1'}, (None, None)),
    ('https://127.9.8.7', {'HTTPS_PROXY': 'http://p:1'}, (None, None)),
    ('https://[::1]:6443', {'HTTPS_PROXY': 'http://p:1'}, (None, None)),
    ('https://[::2]:6443', {'HTTPS_PROXY': 'http://p:1'}, ('http://p:1', 'HTTPS_PROXY')),
    # NO_PROXY, upper case before lower case
    ('https://api.example', {'HTTPS_PROXY': 'http://p:1', 'NO_PROXY': 'api.example'}, (None, None)),
    ('https://api.example', {'HTTPS_PROXY': 'http://p:1', 'no_proxy': 'api.example'}, (None, None)),
    ('https://api.example', {'HTTPS_PROXY': 'http://p:1', 'NO_PROXY': 'other.example', 'no_proxy': 'api.example'},
     ('http://p:1', 'HTTPS_PROXY')),
])
def test_the_environment_proxy(server, environ, expected):
    assert proxy.from_environment(server, environ) == expected
    found = settings({'host': server, 'api_key': 't'}, environ)
    assert (found.proxy, found.proxy_source) == expected


@pytest.mark.parametrize('server, no_proxy, listed', [
    ('https://api.example', None, False),
    ('https://api.example', '', False),
    ('https://api.example', '*', True),
    ('https://api.example', 'other.example, *', True),
    # a domain: itself and its subdomains; with a leading dot or *. its subdomains only; never a mere suffix
    ('https://api.example', 'api.example', True),
    ('https://a.b.api.example', 'api.example', True),
    ('https://notapi.example', 'api.example', False),
    ('https://api.example', '.api.example', False),
    ('https://x.api.example', '.api.example', True),
    ('https://api.example', '*.api.example', False),
    ('https://x.api.example', '*.api.example', True),
    ('https://api.example', 'example', True),
    (' https://API.Example:6443', ' API.EXAMPLE ', True),
    # a port: the server's, 443 or 80 when its URL has none
    ('https://api.example', 'api.example:443', True),
    ('https://api.example:6443', 'api.example:443', False),
    ('https://api.example:6443', 'api.example:6443', True),
    ('http://api.example', 'api.example:80', True),
    # addresses and networks
    ('https://10.1.2.3:6443', '10.1.2.3', True),
    ('https://10.1.2.3:6443', '10.1.2.3:6443', True),
    ('https://10.1.2.3:6443', '10.1.2.3:443', False),
    ('https://10.1.2.3:6443', '10.0.0.0/8', True),
    ('https://11.1.2.3:6443', '10.0.0.0/8', False),
    ('https://10.1.2.3:6443', '192.168.0.0/16,10.1.2.4', False),
    ('https://[2001:db8::1]:6443', '2001:db8::1', True),
    ('https://[2001:db8::1]:6443', '[2001:db8::1]:6443', True),
    ('https://[2001:db8::1]:6443', '[2001:db8::1]:443', False),
    ('https://[2001:db8::1]:6443', '2001:db8::/32', True),
    ('https://[2001:db8::1]:6443', '[2001:db8::1]', False),   # brackets without a port: no address, as in Go
    ('https://api.example', 'api.example/8', False),          # not a network: a domain that does not match
    # malformed entries are skipped
    ('https://api.example', ':1, ,', False),
    # internationalized names compare in their ASCII form
    ('https://www.xn--bcher-kva.example', 'bücher.example', True),
    ('https://www.bücher.example', 'xn--bcher-kva.example', True),
])
def test_no_proxy_entries(server, no_proxy, listed):
    assert proxy.bypasses(server, no_proxy) is listed
    environ = {'HTTPS_PROXY': 'http://p:1', 'HTTP_PROXY': 'http://p:1', 'NO_PROXY': no_proxy or ''}
    assert proxy.from_environment(server.strip(), environ)[0] == (None if listed else 'http://p:1')


# --------------------------------------------------------------------------- which proxy wins

@pytest.mark.parametrize('params, environ, expected', [
    # a kubeconfig's proxy-url wins over the environment, whose NO_PROXY does not override it
    ({'kubeconfig': kubeconfig_with({'proxy-url': 'http://kube:1'})},
     {'HTTPS_PROXY': 'http://env:1', 'NO_PROXY': 'api.example'}, ('http://kube:1', 'proxy-url of cluster c', True)),
    ({'kubeconfig': kubeconfig_with({})}, {'HTTPS_PROXY': 'http://env:1'}, ('http://env:1', 'HTTPS_PROXY', True)),
    ({'kubeconfig': kubeconfig_with({})}, {'HTTPS_PROXY': 'http://env:1', 'NO_PROXY': '.example'}, (None, None, False)),
    # the proxy option wins over both; the no_proxy option lists servers it does not apply to
    ({'kubeconfig': kubeconfig_with({'proxy-url': 'http://kube:1'}), 'proxy': 'http://given:1'},
     {'HTTPS_PROXY': 'http://env:1'}, ('http://given:1', 'proxy', True)),
    ({'host': 'https://api.example', 'proxy': 'http://given:1', 'no_proxy': 'api.example'}, {},
     ('http://given:1', 'proxy', False)),
    # an explicit proxy is used for a loopback server too (as kubectl uses a proxy-url)
    ({'host': 'https://127.0.0.1:6443', 'proxy': 'http://given:1'}, {}, ('http://given:1', 'proxy', True)),
])
def test_which_proxy_reaches_the_server(params, environ, expected):
    found = settings(dict(params, api_key='t'), environ)
    transport = client.Kube(found)._transport
    assert (found.proxy, found.proxy_source, transport.proxied) == expected
    assert isinstance(transport.pool, urllib3.ProxyManager) is expected[2]


def test_a_user_of_the_kubernetes_loader_takes_only_the_proxy_url(tmp_path, monkeypatch):
    """The kubernetes package's Configuration reads ALL_PROXY and lower case first: not taken over."""
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv('ALL_PROXY', 'http://all:1')
    monkeypatch.setenv('https_proxy', 'http://lower:1')
    monkeypatch.setenv('HTTPS_PROXY', 'http://upper:1')
    plugin = tmp_path / 'plugin.py'
    plugin.write_text('import json\nprint(json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1", '
                      '"kind": "ExecCredential", "status": {"token": "exec-token"}}))\n')
    document = kubeconfig_with({})
    document['users'][0]['user'] = {'exec': {'apiVersion': 'client.authentication.k8s.io/v1beta1',
                                             'command': 'python3', 'args': [str(plugin)], 'interactiveMode': 'Never'}}
    found = kubeconfig.settings_from_params({'kubeconfig': document}, dict(
        __import__('os').environ, KUBECONFIG='/nonexistent'))
    assert (found.proxy, found.proxy_source) == ('http://upper:1', 'HTTPS_PROXY')
    document['clusters'][0]['cluster']['proxy-url'] = 'http://kube:1'
    found = kubeconfig.settings_from_params({'kubeconfig': document}, {'NO_PROXY': '*'})
    assert (found.proxy, found.proxy_source) == ('http://kube:1', 'proxy-url of cluster c')


# --------------------------------------------------------------------------- credentials never shown

@pytest.mark.parametrize('url, shown', [
    ('http://user:pw@proxy:3128', 'http://***@proxy:3128'),
    ('http://user:p/w?x#y@proxy:3128/path', 'http://***@proxy:3128/path'),
    ('user:pw@proxy:3128', '***@proxy:3128'),
    ('http://proxy:3128', 'http://proxy:3128'),
    ('http://user:pw@[bad', 'http://***@[bad'),
])
def test_redact(url, shown):
    assert proxy.redact(url) == shown


@pytest.mark.parametrize('params, environ, field', [
    ({'host': 'https://api.example', 'proxy': 'http://user:pw-SECRET@[bad'}, {}, 'proxy'),
    ({'host': 'https://api.example', 'proxy': 'http://user:pw-SECRET@proxy:99999'}, {}, 'proxy'),
    ({'host': 'https://api.example', 'proxy': 'ftp://user:pw-SECRET@proxy:21'}, {}, 'proxy'),
    ({'host': 'https://api.example', 'proxy': 'http://user:pw-SECRET@:3128'}, {}, 'proxy'),
    ({'kubeconfig': kubeconfig_with({'proxy-url': 'http://user:pw-SECRET@[bad'})}, {}, 'proxy-url of cluster c'),
    ({'host': 'https://api.example'}, {'HTTPS_PROXY': 'http://user:pw-SECRET@[bad'}, 'HTTPS_PROXY'),
])
def test_a_proxy_url_that_cannot_work_is_refused_naming_the_field_not_the_password(params, environ, field):
    with pytest.raises(ValidationError) as caught:
        settings(dict(params, api_key='t'), environ)
    assert caught.value.msg.startswith('%s: ' % field) and 'not a usable proxy URL' in caught.value.msg
    assert 'SECRET' not in caught.value.msg and 'user:pw' not in caught.value.msg
    assert '***@' in caught.value.msg


def test_a_proxy_that_does_not_answer_is_named_without_its_credentials():
    closed = socket.socket()
    closed.bind(('127.0.0.1', 0))
    port = closed.getsockname()[1]
    closed.close()   # nothing listens there: connection refused at once
    api = client.Kube(settings({'host': 'https://api.example', 'api_key': 't',
                                'proxy': 'http://user:pw-SECRET@127.0.0.1:%d' % port}, {}))
    with pytest.raises(ConfigError) as caught:
        api.request('GET', '/version')
    assert 'SECRET' not in caught.value.msg and 'user:' not in caught.value.msg
    assert 'through the proxy http://***@127.0.0.1:%d, from proxy' % port in caught.value.msg


def test_scrub_removes_the_password_in_every_form():
    url = 'http://us%40er:p%40ss@proxy:1'
    text = proxy.scrub('failed: %s (user us%%40er:p%%40ss, p@ss)' % url, url)
    assert text == 'failed: http://***@proxy:1 (user ***, ***)'
