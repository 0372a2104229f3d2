/** Facts of the shipped install (config/default) that the controller, the CLI and the tools share. */

/** The namespace config/default installs the controller in: the default wherever the controller's own is not known. */
export const DEFAULT_CONTROLLER_NAMESPACE = "metal3-ipam-system";
