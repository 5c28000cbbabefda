# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

# Options paired with module_utils/args.py WAIT_ARG_SPEC.


class ModuleDocFragment:

    DOCUMENTATION = r'''
options:
  wait:
    description:
      - Wait until each changed pod has verifiably reached the new state.
      - Known failures (for example V(ErrImagePull), V(ImagePullBackOff), V(InvalidImageName),
        V(CrashLoopBackOff), V(CreateContainerError), V(CreateContainerConfigError), V(RunContainerError))
        stop the wait at once, naming the pod, the container, the reason and the message.
      - All pods are followed through one watch per task, not by polling each pod.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait for each pod, counted from the change of that pod. At most 86400 (a day), as every
        option in seconds.
    type: int
    default: 300
  min_ready_seconds:
    description:
      - After a change is verified, the changed containers must keep running (same container, no
        restart) for this many seconds, or the pod counts as failed. Catches containers that crash
        shortly after they start.
    type: int
    default: 0
'''
