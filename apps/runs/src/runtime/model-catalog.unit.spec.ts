import { ModelCatalog } from './model-catalog';

describe('ModelCatalog', () => {
  const builtInOnly = new ModelCatalog({ defaultModel: 'local/scripted', openAiCompatibleBaseUrl: null });
  const withProvider = new ModelCatalog({
    defaultModel: 'local/scripted',
    openAiCompatibleBaseUrl: 'http://127.0.0.1:9/v1',
  });

  it('serves local/scripted built in, with or without a provider', () => {
    const builtIn = { served: true, model: 'local/scripted', provider: 'built-in' };
    expect(builtInOnly.resolve('local/scripted')).toEqual(builtIn);
    expect(withProvider.resolve('local/scripted')).toEqual(builtIn);
  });

  it('uses DEFAULT_MODEL when the intern has no model', () => {
    expect(builtInOnly.effectiveModel(null)).toBe('local/scripted');
    expect(builtInOnly.resolve(null)).toMatchObject({ served: true, model: 'local/scripted' });
    const defaultingToRemote = new ModelCatalog({ defaultModel: 'openai/gpt-4.1', openAiCompatibleBaseUrl: null });
    expect(defaultingToRemote.resolve(null)).toEqual({
      served: false,
      message: 'model "openai/gpt-4.1" is served by no configured provider (MODEL_API_BASE_URL is not set)',
    });
  });

  it('refuses models of other authors when no OpenAI-compatible provider is configured', () => {
    expect(builtInOnly.resolve('openai/gpt-4.1')).toEqual({
      served: false,
      message: 'model "openai/gpt-4.1" is served by no configured provider (MODEL_API_BASE_URL is not set)',
    });
  });

  it('sends models of other authors to the OpenAI-compatible provider when it is configured', () => {
    expect(withProvider.resolve('openai/gpt-4.1')).toEqual({
      served: true,
      model: 'openai/gpt-4.1',
      provider: 'openai-compatible',
    });
    expect(withProvider.resolve('meta-llama/llama-3.3-70b')).toMatchObject({
      served: true,
      provider: 'openai-compatible',
    });
  });

  it('serves no other local model, whatever is configured', () => {
    for (const catalog of [builtInOnly, withProvider]) {
      expect(catalog.resolve('local/other')).toEqual({
        served: false,
        message: 'model "local/other" is served by no configured provider (the only built-in model is local/scripted)',
      });
    }
  });

  it('refuses a model name without an author', () => {
    expect(withProvider.resolve('gpt-4.1')).toMatchObject({
      served: false,
      message: expect.stringContaining('model "gpt-4.1" is served by no configured provider'),
    });
  });
});
