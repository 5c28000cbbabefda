# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Image equivalence, in one place (``satisfies`` / ``effective_image``): a container whose spec image
is not the requested string still counts as running the requested image when

- it is the requested reference with the digest that tag resolved to (``repo:2.0@sha256:..`` for
  ``repo:2.0``: an admission policy pinned the tag, or the user did);
- it is what the API server stored when an image update wrote the requested reference (an admission
  webhook rewrote it: a pinned digest, a registry mirror); the ``image`` record keeps both, its
  ``target`` (requested) and ``stored``;
- it is the digest form that container_recreate's ``image_reference`` strategy switched the
  requested tag to (the ``recreate`` record: its ``before`` holds the tag form, its ``target`` the
  digest form; ``recorded_tag()`` reads it back).

Every comparison of images uses it: the image operation, the image_reference strategy, the rollout's
convergence checks.

The records are claims (anyone who may patch the pod can write them, pods/record.py): they count only when
bound to the pod (record.get_bound: written on this pod, not copied from another), and a ``stored`` image
counts only when it is a plausible rewrite of the requested one (``rewrites``: the same repository name, maybe
below a mirror's registry and path prefix, the same tag, maybe pinned to a digest). A record naming any other
image (the old one, say) changes nothing: the container is updated like one without a record.
"""

from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate, record

RESTART_RECORD = 'recreate'   # the state record written by container_recreate
IMAGE_RECORD = 'image'        # the state record written by inplace_image (keeps ``stored``)


def repository(reference):
    """The reference without tag and digest, as written (``registry.example/app:1.0`` -> ``registry.example/app``)."""
    name = reference.split('@', 1)[0]
    if name.rfind(':') > name.rfind('/'):
        name = name[:name.rfind(':')]
    return name


def same_repository(first, second):
    """Both references name the same repository once normalised (``app`` == ``docker.io/library/app``)."""
    try:
        one, two = podstate.parse_image(first), podstate.parse_image(second)
    except ValueError:
        return False
    return (one.domain, one.path) == (two.domain, two.path)


def is_digest_form(reference):
    """The reference pins a digest and names no tag (``repo@sha256:...``)."""
    try:
        parsed = podstate.parse_image(reference)
    except ValueError:
        return False
    return bool(parsed.digest) and not parsed.tag


def recorded_tag(pod, container):
    """The tag form a container's digest-form image was switched from (by an earlier run), or None."""
    info = podstate.find_container(pod, container)
    rec = record.get_bound(pod, RESTART_RECORD) or {}
    if info is None:
        return None
    spec_image = info.spec.get('image')
    before = ((rec.get('before') or {}).get(container) or {}).get('image')
    if (rec.get('target') or {}).get(container) != spec_image or not before:
        return None
    if is_digest_form(spec_image) and not is_digest_form(before) and same_repository(before, spec_image):
        return before
    return None


def is_recorded_digest_of(pod, container, image):
    """True when the container's spec image is the digest form that container_recreate switched to
    from ``image``: the container runs ``image``'s content and counts as up to date with it."""
    tag = recorded_tag(pod, container)
    return bool(tag) and (podstate.same_image(tag, image) or pins_tag(tag, image))


def pins_tag(stored, requested):
    """``stored`` is ``requested`` (a tag, no digest) with a digest added: ``repo:2.0@sha256:..`` for
    ``repo:2.0`` (the tag resolved and pinned; the kubelet runs the digest)."""
    try:
        want, got = podstate.parse_image(requested), podstate.parse_image(stored)
    except ValueError:
        return False
    if want.digest or not got.digest:
        return False
    return (got.domain, got.path, got.tag or 'latest') == (want.domain, want.path, want.tag or 'latest')


def rewrites(stored, requested):
    """``stored`` is what admission may plausibly make of ``requested``: the same repository path (a mirror
    may change the registry and put a path before it: ``mirror.example/hub/library/app``), the same tag, and
    the requested digest if it names one (a digest may be added). Anything else (another tag, a digest alone
    for a tag) is not taken from a record."""
    try:
        want, got = podstate.parse_image(requested), podstate.parse_image(stored)
    except ValueError:
        return False
    short = want.path[len(podstate.OFFICIAL_PREFIX):] if want.domain == podstate.DEFAULT_DOMAIN and \
        want.path.startswith(podstate.OFFICIAL_PREFIX) else want.path
    if got.path not in (want.path, short) and not got.path.endswith(('/' + want.path, '/' + short)):
        return False
    if not got.tag and got.digest and not want.digest:
        return False   # a digest alone: which tag it stands for is the record's word only
    if (got.tag or 'latest') != (want.tag or 'latest') and not (want.digest and not want.tag):
        return False
    return not want.digest or got.digest == want.digest


def admitted_image(pod, container, requested):
    """The image the API server stored for ``requested`` when an image update wrote it (an admission
    webhook rewrote it), as the pod's own ``image`` record says (bound to the pod) and only when it is a
    plausible rewrite (``rewrites``); None otherwise."""
    rec = record.get_bound(pod, IMAGE_RECORD) or {}
    target = (rec.get('target') or {}).get(container)
    stored = (rec.get('stored') or {}).get(container)
    if not (isinstance(stored, str) and isinstance(target, str)):
        return None
    return stored if podstate.same_image(target, requested) and rewrites(stored, requested) else None


def satisfies(pod, container, requested):
    """True when the container's spec image stands for ``requested``: the same reference once
    normalised, the tag pinned to a digest, what admission stored for it (the ``image`` record), or the
    digest form an image_reference restart switched it to (the ``recreate`` record). The one test of
    "is this container's spec already the requested image" for every module and the rollout."""
    info = podstate.find_container(pod, container)
    if info is None:
        return False
    spec_image = info.spec.get('image')
    if not spec_image or not requested:
        return False
    if podstate.same_image(spec_image, requested) or pins_tag(spec_image, requested):
        return True
    admitted = admitted_image(pod, container, requested)
    if admitted and podstate.same_image(admitted, spec_image):
        return True
    return is_recorded_digest_of(pod, container, requested)


def effective_image(pod, container, requested):
    """The image the container has to run for ``requested``: its spec image when that stands for
    ``requested`` (``satisfies``), else ``requested`` itself. Completion checks compare the running
    container with this (podstate.image_converged), never with the requested string."""
    if satisfies(pod, container, requested):
        return podstate.find_container(pod, container).spec.get('image')
    return requested


def effective_images(pod, requested):
    """``effective_image`` for every container of ``requested`` ({container: image})."""
    return {name: effective_image(pod, name, image) for name, image in requested.items()}


def stored_images(pod, requested):
    """{container: image} where the pod (as the server answered a write) stores another image than
    the ``requested`` one that was written ({} when admission changed nothing)."""
    stored = {}
    for name, image in requested.items():
        info = podstate.find_container(pod, name)
        if info is not None and info.spec.get('image') and info.spec.get('image') != image:
            stored[name] = info.spec.get('image')
    return stored
