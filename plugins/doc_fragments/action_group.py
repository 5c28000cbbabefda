# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

# The action group every module of the collection belongs to (meta/runtime.yml).


class ModuleDocFragment:

    DOCUMENTATION = r'''
attributes:
  action_group:
    description: Use C(group/inplace.k8s.inplace) in C(module_defaults) to set defaults for this module.
    support: full
    membership:
      - inplace.k8s.inplace
'''
