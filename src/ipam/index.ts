/** The pure IPAM domain: address arithmetic, allocation decisions and validation. See README.md. */
export * from "./address.js";
export * from "./naming.js";
export * from "./endpoint.js";
export * from "./fielderror.js";
export * from "./entries.js";
export * from "./freeset.js";
export * from "./random.js";
export * from "./int64.js";
export * from "./allocator.js";
export * from "./ipset.js";
export * from "./incluster-set.js";
export * from "./incluster.js";
export * from "./incluster-validation.js";
export {
  validateIPPool,
  validateIPPoolSpec,
  defaultIPPool,
  ipPoolWarnings,
  ipPoolUpdateWarnings,
  ipClaimWarnings,
  validateIPClaim,
  validateIPAddress,
} from "./validation.js";
