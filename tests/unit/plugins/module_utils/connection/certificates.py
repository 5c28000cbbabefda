# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A test PKI: a CA, a server certificate for 127.0.0.1 and kubernetes.default, a client certificate (the fixture
pki, module-scoped; import it into a test module to use it)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import ipaddress

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _name(common_name):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _signed(subject, key, issuer=None, names=()):
    """PEM of a certificate of ``key`` for ``subject`` (with ``names``: DNS names or IP addresses), signed by
    ``issuer`` ((name, key)) or by itself as a CA."""
    now = datetime.datetime.now(datetime.timezone.utc)
    issuer_name, issuer_key = issuer or (subject, key)
    builder = x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer_name)) \
        .public_key(key.public_key()).serial_number(x509.random_serial_number()) \
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(hours=1)) \
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True) \
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False) \
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False) \
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=issuer is None,
                                     crl_sign=issuer is None, encipher_only=False, decipher_only=False), critical=True)
    # The extensions a real cluster's CA puts in (kubeadm's, the local cluster's Go x509): Python 3.13's strict
    # verification (VERIFY_X509_STRICT by default) refuses a certificate without the Authority Key Identifier.
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName([
            x509.IPAddress(ipaddress.ip_address(n)) if n[0].isdigit() else x509.DNSName(n) for n in names]), False)
    return builder.sign(issuer_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def _key_pem(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


@pytest.fixture(scope='module')
def pki(tmp_path_factory):
    """A CA, the server's certificate for 127.0.0.1 and kubernetes.default, and a client certificate and key."""
    ca_key, server_key, client_key = (ec.generate_private_key(ec.SECP256R1()) for _key in range(3))
    ca = _signed('test-ca', ca_key)
    directory = tmp_path_factory.mktemp('pki')
    (directory / 'server.pem').write_bytes(_signed('apiserver', server_key, ('test-ca', ca_key),
                                                   ['127.0.0.1', 'kubernetes.default']) + _key_pem(server_key))
    (directory / 'ca.pem').write_bytes(ca)
    return {'ca': ca, 'dir': directory, 'cert': _signed('system:admin', client_key, ('test-ca', ca_key)),
            'key': _key_pem(client_key)}
