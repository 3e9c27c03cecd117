import { DomainError } from '@interns/contracts';
import type { ModelCatalog } from '../runtime/model-catalog';
import type { ModelProvider } from './model-provider';
import { OpenAiCompatibleProvider } from './providers/openai-compatible.provider';
import { ScriptedModelProvider } from './providers/scripted.provider';

export interface ModelProvidersOptions {
  catalog: ModelCatalog;
  baseUrl: string | null;
  apiKey: string | null;
  requestTimeoutMs: number;
}

/** Which provider runs a model: the built-in scripted model, or the configured OpenAI-compatible one. */
export class ModelProviders {
  private readonly scripted = new ScriptedModelProvider();
  private readonly openAi: OpenAiCompatibleProvider | null;

  constructor(private readonly options: ModelProvidersOptions) {
    this.openAi =
      options.baseUrl !== null && options.apiKey !== null
        ? new OpenAiCompatibleProvider({ baseUrl: options.baseUrl, apiKey: options.apiKey, requestTimeoutMs: options.requestTimeoutMs })
        : null;
  }

  /** The effective model (null: DEFAULT_MODEL) and its provider; 500 `configuration_error` when none can serve it. */
  resolve(requested: string | null): { model: string; provider: ModelProvider } {
    const resolution = this.options.catalog.resolve(requested);
    if (!resolution.served) throw new DomainError('configuration_error', resolution.message);
    if (resolution.provider === 'built-in') return { model: resolution.model, provider: this.scripted };
    if (this.openAi === null) {
      throw new DomainError('configuration_error', `the model provider serving "${resolution.model}" has no key configured (MODEL_API_KEY)`);
    }
    return { model: resolution.model, provider: this.openAi };
  }
}
