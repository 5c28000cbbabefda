# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The ``image_reference`` restart strategy: switch a container's image string between its tag and
the digest the container runs (``status.imageID``). The kubelet's container hash covers the image
string, so it restarts the container through its normal path (preStop hook, grace period), and the
digest keeps the image content the same.

The switch is recorded in the pod's state record (operation ``recreate``): the record's ``before``
holds the tag form and its ``target`` the digest form. ``recorded_tag()`` reads it back, so a later
run switches back to the tag, and ``is_recorded_digest_of()`` tells other code (the rollout role,
an image update) that a digest-pinned container still runs "its" tag.

Image equivalence lives here, in one place (``satisfies`` / ``effective_image``): a container whose
spec image is not the requested string still counts as running the requested image when

- it is the requested reference with the digest that tag resolved to (``repo:2.0@sha256:..`` for
  ``repo:2.0``: an admission policy pinned the tag, or the user did);
- it is what the API server stored when an image update wrote the requested reference (an admission
  webhook rewrote it: a pinned digest, a registry mirror); the ``image`` record keeps both, its
  ``target`` (requested) and ``stored``;
- it is the digest form that container_recreate's ``image_reference`` strategy switched the
  requested tag to (the ``recreate`` record).
"""

from ansible_collections.inplace.k8s.plugins.module_utils import podstate, record, restart

RECORD_KEY = 'recreate'   # the state record written by container_recreate
IMAGE_RECORD_KEY = 'image'  # the state record written by inplace_image (keeps ``stored``)
STRATEGY = 'image_reference'


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


def repo_digest(image_id):
    """The repository digest in a ``status.imageID`` (``docker.io/library/app@sha256:ab..`` or
    ``docker-pullable://app@sha256:ab..`` -> ``sha256:ab..``); None for a bare image ID (``sha256:..``
    alone names the local image configuration, not something a registry serves)."""
    if not image_id or '@' not in image_id:
        return None
    digest = image_id.rsplit('@', 1)[1]
    return digest if podstate.pinned_digest('x@' + digest) else None


def digest_form(spec_image, image_id):
    """(the digest form of ``spec_image`` for the content it runs, None) or (None, why not)."""
    error = podstate.image_error(spec_image)
    if error:
        return None, error
    digest = repo_digest(image_id)
    if not digest:
        return None, ('status.imageID %r carries no repository digest (the image was not pulled from a '
                      'registry); there is no digest to switch to' % (image_id or ''))
    pinned = podstate.pinned_digest(spec_image)
    if pinned and pinned != digest:
        return None, 'the image pins %s but the container runs %s' % (pinned, digest)
    return '%s@%s' % (repository(spec_image), digest), None


def switch_target(spec_image, image_id, recorded=None):
    """(the other form of the container's image, None) or (None, why not).

    A tag form (``repo:tag``, ``repo``, ``repo:tag@digest``) switches to ``repo@<digest of imageID>``;
    the digest form switches back to the ``recorded`` tag form when it names the same repository.
    """
    if is_digest_form(spec_image):
        if recorded and not is_digest_form(recorded) and same_repository(recorded, spec_image):
            return recorded, None
        return None, ('the image %s is pinned by digest and no earlier tag of it is recorded on the pod; '
                      'there is no other reference to the same content to switch to' % spec_image)
    return digest_form(spec_image, image_id)


def recorded_tag(pod, container):
    """The tag form a container's digest-form image was switched from (by an earlier run), or None."""
    info = podstate.find_container(pod, container)
    rec = record.get(pod, RECORD_KEY) or {}
    if info is None:
        return None
    spec_image = info.spec.get('image')
    before = ((rec.get('before') or {}).get(container) or {}).get('image')
    if ((rec.get('target') or {}).get(container) == spec_image and before and is_digest_form(spec_image)
            and not is_digest_form(before) and same_repository(before, spec_image)):
        return before
    return None


def is_recorded_digest_of(pod, container, image):
    """True when the container's spec image is the digest form that container_recreate switched to
    from ``image``: the container runs ``image``'s content and counts as up to date with it."""
    tag = recorded_tag(pod, container)
    return bool(tag) and (podstate.same_image(tag, image) or pins_tag(tag, image))


def switch_ops(pod, cplans):
    """JSON patch operations switching the image of each container plan (``current`` -> ``desired``),
    each guarded by a ``test`` of the container's name and current image."""
    ops = []
    for cplan in cplans:
        path = podstate.spec_path(podstate.find_container(pod, cplan.name))
        ops.append({'op': 'test', 'path': path + '/name', 'value': cplan.name})
        ops.append({'op': 'test', 'path': path + '/image', 'value': cplan.current})
        ops.append({'op': 'replace', 'path': path + '/image', 'value': str(cplan.desired)})
    return ops


class ImageReferenceStrategy(restart.Strategy):
    """Restart by switching the image reference (see the module docstring)."""

    name = STRATEGY
    spec_change = True   # the kubelet restarts a changed container whatever the pod's restartPolicy

    def target(self, pod, info):
        return switch_target(info.spec.get('image'), info.status.get('imageID'), recorded_tag(pod, info.name))

    def current(self, info):
        return info.spec.get('image')

    def act(self, kube, pod, cplans, tracked):
        return kube.patch_pod(podstate.meta(pod, 'namespace'), podstate.meta(pod, 'name'), switch_ops(pod, cplans))

    def finished(self, pod, cplan, tracked):
        info = podstate.find_container(pod, cplan.name)
        return info is not None and podstate.running_image_is(info.status, cplan.desired)

    def describe(self, cplan, tracked):
        return {'old_image': cplan.current, 'new_image': cplan.desired}


# --------------------------------------------------------------------------- image equivalence

def pins_tag(stored, requested):
    """``stored`` is ``requested`` (a tag, no digest) with a digest added: ``repo:2.0@sha256:..`` for
    ``repo:2.0`` (the tag resolved and pinned; the kubelet runs the digest)."""
    try:
        want, got = podstate.parse_image(requested), podstate.parse_image(stored)
    except ValueError:
        return False
    return (not want.digest and bool(got.digest) and (got.domain, got.path) == (want.domain, want.path)
            and (got.tag or 'latest') == (want.tag or 'latest'))


def admitted_image(pod, container, requested):
    """The image the API server stored for ``requested`` when an image update wrote it (an admission
    webhook rewrote it), as the pod's ``image`` record says; None when the record has no such entry."""
    rec = record.get(pod, IMAGE_RECORD_KEY) or {}
    target = (rec.get('target') or {}).get(container)
    stored = (rec.get('stored') or {}).get(container)
    if stored and target and podstate.same_image(target, requested):
        return stored
    return None


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
