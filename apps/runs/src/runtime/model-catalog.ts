import { MODEL_PATTERN } from '@interns/contracts';

/** The model every runtime can run without network: it follows directives in the user message. */
export const SCRIPTED_MODEL = 'local/scripted';
/** Models of this author are built in; no external provider serves them. */
export const BUILT_IN_AUTHOR = 'local';

export type ModelProvider = 'built-in' | 'openai-compatible';

export type ModelResolution =
  | { served: true; model: string; provider: ModelProvider }
  | { served: false; message: string };

export interface ModelCatalogOptions {
  /** DEFAULT_MODEL: used when an intern's model is null. */
  defaultModel: string;
  /** MODEL_API_BASE_URL, or null when no OpenAI-compatible provider is configured. */
  openAiCompatibleBaseUrl: string | null;
}

/**
 * Which configured provider serves a model. `local/scripted` is built in; a model of any other author
 * goes to the OpenAI-compatible provider, so it is served only when that provider is configured.
 */
export class ModelCatalog {
  constructor(private readonly options: ModelCatalogOptions) {}

  effectiveModel(requested: string | null): string {
    return requested ?? this.options.defaultModel;
  }

  resolve(requested: string | null): ModelResolution {
    const model = this.effectiveModel(requested);
    const unserved = (why: string): ModelResolution => ({
      served: false,
      message: `model "${model}" is served by no configured provider (${why})`,
    });
    if (!MODEL_PATTERN.test(model)) return unserved('a model is named "<author>/<model>"');
    if (model === SCRIPTED_MODEL) return { served: true, model, provider: 'built-in' };
    if (model.slice(0, model.indexOf('/')) === BUILT_IN_AUTHOR) {
      return unserved(`the only built-in model is ${SCRIPTED_MODEL}`);
    }
    if (this.options.openAiCompatibleBaseUrl === null) return unserved('MODEL_API_BASE_URL is not set');
    return { served: true, model, provider: 'openai-compatible' };
  }
}
