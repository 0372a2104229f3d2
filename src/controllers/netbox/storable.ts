/**
 * Whether NetBox can store the record a claim would get. Pure: no Kubernetes or HTTP imports.
 *
 * NetBox refuses a record whose fields break its model's rules with a 400 for the whole `available-ips` list, so one
 * claim it cannot store would fail every claim asked with it, on every pass. The engine asks this first, with the
 * record exactly as it would be sent (the final description, whatever it holds), and fails such a claim alone.
 */

/** NetBox 4's `description` of every model: `CharField(max_length=200)`. */
export const MAX_DESCRIPTION = 200;
/** NetBox 4's `dns_name` of an IP address: `CharField(max_length=255)` with `DNSValidator`. */
export const MAX_DNS_NAME = 255;
/**
 * NetBox's `DNSValidator` (ipam/validators.py): labels of letters, digits, hyphens and underscores (or a first label
 * `*`), separated by single dots, with an optional final dot.
 */
const DNS_NAME = /^([0-9A-Za-z_-]+|\*)(\.[0-9A-Za-z_-]+)*\.?$/;

/** Characters as NetBox (Python) counts them: code points, not UTF-16 units. */
const lengthOf = (text: string): number => [...text].length;

/** Why NetBox cannot store a record with this description and DNS name, or undefined when it can. */
export function unstorableReason(record: { description: string; dnsName?: string | undefined }): string | undefined {
  const description = lengthOf(record.description);
  if (description > MAX_DESCRIPTION)
    return `its NetBox description would be ${description} characters and NetBox stores at most ${MAX_DESCRIPTION}: shorten the claim's name or namespace`;
  const dnsName = record.dnsName;
  if (dnsName === undefined || dnsName === "") return undefined;
  if (lengthOf(dnsName) > MAX_DNS_NAME)
    return `its DNS name would be ${lengthOf(dnsName)} characters and NetBox stores at most ${MAX_DNS_NAME}: shorten the claim's name or the pool's dnsNameTemplate`;
  if (!DNS_NAME.test(dnsName))
    return `its DNS name ${JSON.stringify(dnsName.slice(0, 80))} is not one NetBox accepts (letters, digits, hyphens and underscores in labels separated by single dots)`;
  return undefined;
}
