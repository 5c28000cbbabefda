# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The kubernetes package's kubeconfig loader (imported here only: its import is a large part of a module's
start-up, docs/performance.md), for the users kubeconfig.py does not load itself: those whose credentials come from an ``exec`` plugin
or an ``auth-provider``."""

import os
import shutil
import tempfile

from ansible_collections.inplace.k8s.plugins.module_utils.connection.settings import (
    ConnectionSettings, kubernetes, private_file,
)


class LoaderError(Exception):
    """The loader refused the kubeconfig; ``cause``: its ConfigException, whose message is passed on."""

    def __init__(self, cause):
        super().__init__(str(cause))
        self.cause = cause


def settings(kubeconfig, context, persist_config):
    """The kubernetes package's kubeconfig loader, for users whose credentials come from an exec plugin
    or an auth-provider: it runs the plugin, refreshes expiring tokens and writes refreshed ones back
    to the file with ``persist_config``. The files it writes of certificate and key data (in a directory of its
    own here) are read into private files and removed before it returns."""
    kube_config = kubernetes('config')
    cfg = kubernetes('client').Configuration()
    scratch = tempfile.mkdtemp(prefix='inplace-k8s-')
    try:
        if isinstance(kubeconfig, dict):
            kube_config.load_kube_config_from_dict(kubeconfig, context=context, client_configuration=cfg,
                                                   persist_config=False, temp_file_path=scratch)
        else:
            kube_config.load_kube_config(config_file=os.path.expanduser(kubeconfig) if kubeconfig else None,
                                         context=context, client_configuration=cfg,
                                         persist_config=bool(persist_config), temp_file_path=scratch)
        found = ConnectionSettings(cfg.host)
        # proxy: the kubeconfig's proxy-url only (settings_from_params); the loader's Configuration reads the
        # environment by other rules than kubectl's.
        for attribute in ('verify_ssl', 'ssl_ca_cert', 'cert_file', 'key_file', 'tls_server_name', 'proxy_headers'):
            value = getattr(cfg, attribute, None)
            if isinstance(value, str) and os.path.dirname(os.path.abspath(value)) == scratch:
                with open(value, 'rb') as stream:
                    value = private_file(stream.read())
            setattr(found, attribute, value)
    except kube_config.ConfigException as exc:
        raise LoaderError(exc)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if not found.verify_ssl:
        found.verify_source = 'insecure-skip-tls-verify in the kubeconfig'

    def authorization():
        for setting in cfg.auth_settings().values():
            if setting.get('in') == 'header' and setting.get('key') == 'authorization':
                return setting.get('value') or None
        return None
    found.authorization = authorization
    found.authorization_source = 'the exec plugin or auth-provider of the kubeconfig user'
    return found
