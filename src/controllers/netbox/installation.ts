/**
 * The installation id every NetBox record of this management cluster carries in its key (identity.ts): the
 * `--netbox-installation-id` flag when given, else the short form of the `kube-system` Namespace's uid.
 *
 * Why that Namespace: every cluster has it, its uid is set once by the API server and lives as long as the cluster
 * (it cannot be deleted), two clusters never share it, and reading it needs no write and no state of ours. The flag
 * is for operators who rebuild a management cluster (a new uid) and want it to keep the records of the old one, or
 * who run several controllers on one cluster against one NetBox prefix; two clusters given one id share records again,
 * which is what the flag is for and all it is for.
 */
import { isNotFound } from "../../kube/errors.js";
import { ResourceClient, type KubeObject } from "../../kube/resource.js";
import type { KindContext } from "../pools/kind.js";
import { installationOfUid } from "./identity.js";

const INSTALLATION_NAMESPACE = "kube-system";

const NAMESPACES = { group: "", version: "v1", plural: "namespaces", kind: "Namespace", namespaced: false };

/** RBAC: read the one Namespace whose uid names this management cluster in NetBox; no other, no list, no watch. */
export const INSTALLATION_RULES = [
  { apiGroups: [""], resources: ["namespaces"], resourceNames: [INSTALLATION_NAMESPACE], verbs: ["get"] },
];

/**
 * The installation id, resolved once (`override` as given, or read from the cluster at the first call; a failed read
 * is tried again at the next call and throws the API server's error, so the pass fails and backs off).
 */
export function installationSource(override: string | undefined): (ctx: KindContext) => Promise<string> {
  let resolved: string | undefined = override;
  return async (ctx) => {
    if (resolved !== undefined) return resolved;
    const api = new ResourceClient<KubeObject>(ctx.store.kubeConfig, NAMESPACES);
    let uid: string;
    try {
      uid = (await api.get("", INSTALLATION_NAMESPACE)).metadata.uid ?? "";
    } catch (err) {
      if (isNotFound(err))
        throw new Error(`Namespace ${INSTALLATION_NAMESPACE} does not exist: give --netbox-installation-id`);
      throw err;
    }
    const id = installationOfUid(uid);
    if (id === undefined)
      throw new Error(`Namespace ${INSTALLATION_NAMESPACE} has uid "${uid}": give --netbox-installation-id`);
    resolved = id;
    ctx.log.info("NetBox records of this management cluster carry its installation id", { installation: id });
    return id;
  };
}
