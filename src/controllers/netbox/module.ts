/**
 * The NetBox pool kinds as a module (pools/module.ts): served once their CRDs are. Both kinds share one engine per
 * manager (what it keeps of each pool, one client per NetBox instance).
 */
import { DEFAULT_CONTROLLER_NAMESPACE } from "../../../api/install.js";
import { netBoxClient } from "../../netbox/client.js";
import type { KindModule } from "../pools/module.js";
import { NETBOX_SECRET_RULES, netBoxConnector } from "./connect.js";
import { NetBoxEngine } from "./engine.js";
import { INSTALLATION_RULES, installationSource } from "./installation.js";
import { NETBOX_RULES, netBoxPoolKinds } from "./kind.js";
import { NETBOX_METRICS } from "./metrics.js";

/** Deadline of one NetBox request (an allocation is quick; a list of a full prefix is the slowest request). */
const NETBOX_TIMEOUT_MS = 30_000;
const NETBOX_USER_AGENT = "metal3-ipam-ts";

export const NETBOX_MODULE: KindModule = {
  kinds(options) {
    const metrics = options.metrics.extend(NETBOX_METRICS);
    const connector = netBoxConnector(
      options.controllerNamespace ?? DEFAULT_CONTROLLER_NAMESPACE,
      (endpoint) =>
        netBoxClient(endpoint, {
          timeoutMs: NETBOX_TIMEOUT_MS,
          userAgent: NETBOX_USER_AGENT,
          observe: (o) => metrics.request(o),
        }),
      { allowHttp: options.netBoxAllowHttp ?? false },
    );
    return netBoxPoolKinds(new NetBoxEngine(connector, installationSource(options.netBoxInstallationId)), metrics);
  },
  clusterRules: [...NETBOX_RULES, ...INSTALLATION_RULES],
  // Tokens are read from Secrets of the controller's namespace only (connect.ts).
  namespaceRules: NETBOX_SECRET_RULES,
};
