import { normalizeHostname } from '@interns/contracts';
import { withoutPort } from '../http/regional-host';

/**
 * Which requests the door serves (interface section 20): those whose `Host` is a name under INTERN_DOMAIN, compared
 * as DNS compares names (any port ignored, case-insensitive, the root dot ignored). Such a request never reaches
 * `/api/v1`; whether the name is an intern's is the directory's to say (else 404).
 */
export class DoorHosts {
  private readonly suffix: string;
  /** The route constraint for Fastify: the same rule as `hostnameOf`, on the raw header (find-my-way matches it). */
  readonly constraint: RegExp;

  constructor(internDomain: string) {
    const domain = normalizeHostname(internDomain);
    this.suffix = `.${domain}`;
    const escaped = domain.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    this.constraint = new RegExp(`^[^/\\[\\]:]+\\.${escaped}\\.?(:\\d*)?$`, 'i');
  }

  /**
   * The normalized name when `Host` names something under INTERN_DOMAIN (whether or not DNS would allow it: the
   * directory finds no intern for a malformed one); null for every other host.
   */
  hostnameOf(hostHeader: string | undefined): string | null {
    if (hostHeader === undefined) return null;
    const hostname = normalizeHostname(withoutPort(hostHeader));
    if (!hostname.endsWith(this.suffix) || hostname.length === this.suffix.length) return null;
    return hostname;
  }
}
