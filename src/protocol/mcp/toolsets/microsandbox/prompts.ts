/**
 * microsandbox's two prompts, `create_python_sandbox` and `create_node_sandbox` (arguments
 * `sandbox_name` and `namespace`, both required in prompts/list; `msb server` filled in `python-sandbox`
 * / `node-sandbox` and `default` when one was missing): a user message asking for sandbox_start with
 * that language's image.
 */
import type { GetPromptResult, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { SIZES } from '../../../../domain/limits.ts';

const args = z.object({
  sandbox_name: z.string().max(SIZES.nameChars).describe('Name for the new sandbox'),
  namespace: z.string().max(SIZES.nameChars).describe('Namespace for the sandbox'),
});

function prompt(kind: 'Python' | 'Node.js', image: string, fallback: string, use: string) {
  return ({ sandbox_name, namespace }: z.output<typeof args>): GetPromptResult => ({
    description: `Create a ${kind} development sandbox`,
    messages: [
      {
        role: 'user',
        content: {
          type: 'text',
          text: `Create a ${kind} sandbox named '${sandbox_name || fallback}' in namespace '${namespace || 'default'}' with the sandbox_start tool, using this configuration:\n\n- Image: ${image}\n- Memory: 512 MiB\n- CPUs: 1\n\nIt gives a ${kind} environment ready for ${use}.`,
        },
      },
    ],
  });
}

export function registerMicrosandboxPrompts(server: McpServer): void {
  server.registerPrompt(
    'create_python_sandbox',
    { description: 'Create a Python development sandbox', argsSchema: args },
    prompt('Python', 'microsandbox/python', 'python-sandbox', 'code execution'),
  );
  server.registerPrompt(
    'create_node_sandbox',
    { description: 'Create a Node.js development sandbox', argsSchema: args },
    prompt('Node.js', 'microsandbox/node', 'node-sandbox', 'JavaScript execution'),
  );
}
