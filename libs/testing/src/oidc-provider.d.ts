/**
 * The part of oidc-provider 9 (which ships no types; @types/oidc-provider is not installed) that the test
 * authorization server uses. Shapes follow the package's documentation (docs/README.md upstream).
 */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  /** The configuration object; each option is checked by oidc-provider itself when the Provider is built. */
  export type Configuration = Record<string, unknown>;

  export interface InteractionPrompt {
    name: string;
    reasons: string[];
    details: {
      missingOIDCScope?: string[];
      missingOIDCClaims?: string[];
      missingResourceScopes?: Record<string, string[]>;
    };
  }

  export interface Interaction {
    uid: string;
    prompt: InteractionPrompt;
    params: Record<string, unknown>;
    session?: { accountId: string };
    grantId?: string;
  }

  export type InteractionResult =
    | { login: { accountId: string } }
    | { consent: { grantId: string } }
    | { error: string; error_description?: string };

  export class Grant {
    constructor(properties: { accountId: string; clientId: string });
    addOIDCScope(scope: string): void;
    addOIDCClaims(claims: string[]): void;
    addResourceScope(resource: string, scope: string): void;
    save(): Promise<string>;
  }

  /** The koa context oidc-provider hands to helpers and middleware (only what the test server reads). */
  export interface ProviderContext {
    status: number;
    body: unknown;
    type: string;
    oidc?: { route?: string };
  }

  export class Provider {
    constructor(issuer: string, configuration: Configuration);
    readonly issuer: string;
    readonly Grant: typeof Grant & { find(id: string): Promise<Grant | undefined> };
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    use(middleware: (ctx: ProviderContext, next: () => Promise<void>) => Promise<void>): void;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<Interaction>;
    interactionFinished(req: IncomingMessage, res: ServerResponse, result: InteractionResult, options?: { mergeWithLastSubmission?: boolean }): Promise<void>;
  }

  export const errors: {
    InvalidTarget: new (description?: string) => Error;
  };

  export default Provider;
}

/** The package's in-memory store (a deep import: the package has no exports map). */
declare module 'oidc-provider/lib/adapters/memory_adapter.js' {
  /** A factory of per-model adapters over one store of its own. */
  export function createMemoryAdapter(clockTolerance?: number): (model: string) => unknown;
}
