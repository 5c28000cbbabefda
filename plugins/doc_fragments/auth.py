# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

# Options paired with module_utils/args.py AUTH_ARG_SPEC (the same names, aliases and
# K8S_AUTH_* variables as kubernetes.core).


class ModuleDocFragment:

    DOCUMENTATION = r'''
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file, or the kubeconfig content as a dictionary, or as text (for example
        C("{{ lookup('file', 'kubeconfig') }}") - a string holding a line break, or JSON).
      - Never logged; of a dictionary or text only the credentials are masked in results and messages (tokens,
        passwords, C(client-key-data), an exec plugin's C(env) values and C(args), the user-info of C(proxy-url)).
      - Without it, C(host) or C(context), the default kubeconfig (E(KUBECONFIG) or C(~/.kube/config)) is
        used, and inside a pod the service account of the pod.
      - Can also be set with the E(K8S_AUTH_KUBECONFIG) environment variable.
    type: raw
  context:
    description:
      - The kubeconfig context to use. Can also be set with E(K8S_AUTH_CONTEXT).
    type: str
  host:
    description:
      - URL of the API server. Can also be set with E(K8S_AUTH_HOST).
    type: str
  api_key:
    description:
      - Bearer token to authenticate with. Can also be set with E(K8S_AUTH_API_KEY).
    type: str
  username:
    description:
      - User name for basic authentication. Can also be set with E(K8S_AUTH_USERNAME).
    type: str
  password:
    description:
      - Password for basic authentication. Can also be set with E(K8S_AUTH_PASSWORD).
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate. Can also be set with E(K8S_AUTH_VERIFY_SSL).
      - Off (here or with C(insecure-skip-tls-verify) in the kubeconfig), a run warns once.
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path to a CA certificate to verify the API server with. Can also be set with E(K8S_AUTH_SSL_CA_CERT).
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Path to a client certificate. Can also be set with E(K8S_AUTH_CERT_FILE).
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path to the key of the client certificate. Can also be set with E(K8S_AUTH_KEY_FILE).
    type: path
    aliases: [key_file]
  proxy:
    description:
      - HTTP(S) or SOCKS proxy URL for the connection. Can also be set with E(K8S_AUTH_PROXY).
      - It wins over the kubeconfig's C(proxy-url). Without either, the environment sets the proxy as for
        C(kubectl) - E(HTTPS_PROXY) (E(HTTP_PROXY) for an http server), the upper case name before the lower
        case one, never E(ALL_PROXY), never for localhost or a loopback address, not for a server that
        E(NO_PROXY) lists.
      - Never logged; its C(user:password) is masked in results and messages.
    type: str
  no_proxy:
    description:
      - Comma-separated hosts, domains and networks reached without the proxy (O(proxy) or the kubeconfig's
        C(proxy-url)), by the rules of E(NO_PROXY) - C(example.com) matches it and its subdomains,
        C(.example.com) its subdomains only, C(10.0.0.0/8) a network, C(host:port) that port only.
        Can also be set with E(K8S_AUTH_NO_PROXY).
    type: str
  proxy_headers:
    description:
      - Headers sent to the proxy (O(proxy)), as in C(kubernetes.core).
    type: dict
    suboptions:
      proxy_basic_auth:
        description:
          - C(user:password) for a proxy that asks for basic authentication. Can also be set with
            E(K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH).
        type: str
      basic_auth:
        description:
          - C(user:password) sent as an C(Authorization) header to the proxy. Can also be set with
            E(K8S_AUTH_PROXY_HEADERS_BASIC_AUTH).
        type: str
      user_agent:
        description:
          - C(User-Agent) header sent to the proxy. Can also be set with E(K8S_AUTH_PROXY_HEADERS_USER_AGENT).
        type: str
  persist_config:
    description:
      - Write tokens refreshed by a kubeconfig auth provider back to the kubeconfig file, as in
        C(kubernetes.core). Can also be set with E(K8S_AUTH_PERSIST_CONFIG).
    type: bool
  impersonate_user:
    description:
      - User name to act as, as C(kubectl --as). Can also be set with E(K8S_AUTH_IMPERSONATE_USER).
      - Without it, the user of the kubeconfig context may set one (its C(as) field), as for C(kubectl).
      - The credentials used need the C(impersonate) verb on C(users) (and on C(groups), C(uids),
        C(userextras/<key>) for the options below); every request of the run is then authorized as this user.
    type: str
  impersonate_groups:
    description:
      - Groups to act as, as C(kubectl --as-group) (one C(Impersonate-Group) header per group). Can also be set
        with E(K8S_AUTH_IMPERSONATE_GROUPS) (comma-separated). Needs O(impersonate_user) (or C(as) in the
        kubeconfig user).
      - Without it, the kubeconfig user's C(as-groups) apply, as for C(kubectl).
    type: list
    elements: str
  impersonate_uid:
    description:
      - UID to act as, as C(kubectl --as-uid). Can also be set with E(K8S_AUTH_IMPERSONATE_UID). Needs
        O(impersonate_user). Without it, the kubeconfig user's C(as-uid) applies.
    type: str
  impersonate_extra:
    description:
      - Extra fields of the user to act as, key -> list of values, as a kubeconfig user's C(as-user-extra)
        (one C(Impersonate-Extra-<key>) header per value, the key percent-encoded as client-go writes it). Can
        also be set with E(K8S_AUTH_IMPERSONATE_EXTRA) (JSON). Needs O(impersonate_user).
      - Its keys replace the same keys of the kubeconfig user's C(as-user-extra); the other keys of it stay.
    type: dict
notes:
  - Secrets (O(api_key), O(password), the proxy credentials, the credentials of O(kubeconfig)) are never logged or
    returned, and copies of client keys never outlive the process that made them (in memory on Linux).
  - A header value (an impersonation option or kubeconfig field, a token, a proxy header) holding a line break
    or another control character is refused before any request is sent, naming the option.
requirements:
  - python >= 3.9
  - urllib3 >= 2
  - kubernetes (the Python client) >= 31.0.0, only for kubeconfig users with an exec plugin or an auth-provider, and
    for the exec restart strategy of M(inplace.k8s.container_recreate)
'''
