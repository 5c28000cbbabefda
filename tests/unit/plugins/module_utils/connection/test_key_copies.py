# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Copies of client certificates and keys (the ssl module reads them from files only) never outlive the process
that made them: in memory where the system has memfd (Linux), else files of this user that the process removes at
its exit, a detached child (the guardian, the keeper: detach.fork, which ends with os._exit) included; the files
the kubernetes loader writes for an exec plugin's certificate are read into memory and removed at once."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import datetime
import json
import os
import ssl
import sys
import tempfile

import pytest

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ansible_collections.inplace.k8s.plugins.module_utils.process import detach
from ansible_collections.inplace.k8s.plugins.module_utils.connection import kubeconfig, settings


def certificate_and_key():
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, u'deployer')])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


@pytest.fixture
def tmpdir_only(monkeypatch, tmp_path):
    """The temporary directory is ``tmp_path`` (empty)."""
    monkeypatch.setattr(tempfile, 'tempdir', str(tmp_path))
    return tmp_path


@pytest.fixture
def no_memfd(monkeypatch):
    """A system without files in memory: private_file writes files."""
    monkeypatch.setattr(settings, '_memory_file', lambda data: None)


def exited(pid):
    return os.WEXITSTATUS(os.waitpid(pid, 0)[1])


def test_key_copies_live_in_memory_and_the_ssl_module_loads_them_here_and_in_a_forked_child(tmpdir_only):
    cert, key = certificate_and_key()
    cert_path, key_path = settings.private_file(cert), settings.private_file(key)
    assert cert_path.startswith('/proc/self/fd/') and os.listdir(str(tmpdir_only)) == []
    ssl.create_default_context().load_cert_chain(cert_path, key_path)
    read_fd, write_fd = os.pipe()

    def body():   # the guardian's and the keeper's case: the same paths after the fork
        ssl.create_default_context().load_cert_chain(cert_path, key_path)
        os.write(write_fd, b'loaded')
    pid = detach.fork(body, child_closes=(read_fd,), parent_closes=(write_fd,))
    assert exited(pid) == 0 and os.read(read_fd, 16) == b'loaded'
    os.close(read_fd)


def test_a_detached_child_removes_the_copies_on_disk_it_made_and_leaves_its_parents(tmpdir_only, no_memfd):
    parents = settings.private_file(b'PARENT-KEY')
    read_fd, write_fd = os.pipe()

    def body():
        os.write(write_fd, settings.private_file(b'CHILD-KEY').encode())
    pid = detach.fork(body, child_closes=(read_fd,), parent_closes=(write_fd,))
    assert exited(pid) == 0
    childs = os.read(read_fd, 4096).decode()
    os.close(read_fd)
    assert childs.startswith(str(tmpdir_only)) and not os.path.exists(childs)   # gone, though os._exit ended it
    assert os.path.exists(parents)   # this process still runs: its copy stays
    settings.remove_private_files()   # its exit (atexit)
    assert os.listdir(str(tmpdir_only)) == []


def test_a_copy_on_disk_of_a_process_that_is_gone_is_removed_by_the_next_cleanup(tmpdir_only, no_memfd, monkeypatch):
    """A module killed with SIGKILL runs no atexit: its guardian, which outlives it, removes its copies."""
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    exited(pid)
    path = str(tmpdir_only / 'inplace-k8s-killed')
    with open(path, 'wb') as stream:
        stream.write(b'KEY')
    monkeypatch.setattr(settings, '_private_files', [(pid, path, None)])
    settings.remove_private_files()
    assert not os.path.exists(path)


def test_the_exec_plugins_certificate_files_of_the_kubernetes_loader_go_to_memory(tmpdir_only, tmp_path_factory):
    cert, key = certificate_and_key()
    plugin = tmp_path_factory.mktemp('plugin') / 'plugin.py'
    plugin.write_text('import json\nprint(json.dumps(%s))\n' % json.dumps({
        'apiVersion': 'client.authentication.k8s.io/v1beta1', 'kind': 'ExecCredential',
        'status': {'clientCertificateData': cert.decode(), 'clientKeyData': key.decode()}}))
    document = {
        'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'x',
        'clusters': [{'name': 'c', 'cluster': {'server': 'https://api.example:6443',
                                               'certificate-authority-data': base64.b64encode(cert).decode()}}],
        'users': [{'name': 'u', 'user': {'exec': {'apiVersion': 'client.authentication.k8s.io/v1beta1',
                                                  'command': sys.executable, 'args': [str(plugin)],
                                                  'interactiveMode': 'Never'}}}],
        'contexts': [{'name': 'x', 'context': {'cluster': 'c', 'user': 'u'}}]}
    found = kubeconfig.settings_from_params({'kubeconfig': document}, {'KUBECONFIG': '/nonexistent'})
    for path, content in ((found.cert_file, cert), (found.key_file, key), (found.ssl_ca_cert, cert)):
        assert path.startswith('/proc/self/fd/')
        with open(path, 'rb') as stream:
            assert stream.read() == content
    assert os.listdir(str(tmpdir_only)) == []   # the loader's directory and files are gone
