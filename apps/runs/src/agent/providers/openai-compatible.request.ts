import type { ConversationMessage, ModelTurnRequest, ToolSpec } from '../model-provider';

/** The body of `POST /chat/completions` for one streamed turn, usage included in the stream. */
export function requestBody(request: ModelTurnRequest): Record<string, unknown> {
  return {
    model: request.model,
    messages: request.messages.map(toOpenAiMessage),
    ...(request.tools.length > 0 ? { tools: request.tools.map(toOpenAiTool) } : {}),
    stream: true,
    stream_options: { include_usage: true },
  };
}

function toOpenAiMessage(message: ConversationMessage): Record<string, unknown> {
  switch (message.role) {
    case 'assistant':
      if (message.toolCalls.length === 0) return { role: 'assistant', content: message.content };
      return {
        role: 'assistant',
        content: message.content === '' ? null : message.content,
        tool_calls: message.toolCalls.map((call) => ({
          id: call.id,
          type: 'function',
          function: { name: call.name, arguments: call.arguments },
        })),
      };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
    default:
      return { role: message.role, content: message.content };
  }
}

function toOpenAiTool(tool: ToolSpec): Record<string, unknown> {
  const { name, description, parameters } = tool;
  return { type: 'function', function: { name, description, parameters } };
}
