/**
 * Every pool kind module this controller has, each registered once: adding a kind is its folder and one line here.
 * The manager (its kinds, caches, claim APIs and shared kinds) and RBAC generation (`src/rbac.ts`) iterate this
 * list and name no kind. Order is the order of `PoolKinds.all`.
 */
import { METAL3_MODULE } from "./ippool/module.js";
import { INCLUSTER_MODULE } from "./incluster/module.js";
import { NETBOX_MODULE } from "./netbox/module.js";
import type { KindModule } from "./pools/module.js";

export const KIND_MODULES: readonly KindModule[] = [METAL3_MODULE, INCLUSTER_MODULE, NETBOX_MODULE];
