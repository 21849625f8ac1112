/** The v1 TypeScript SDK over Streamable HTTP against a real daemon: see v1-sdk-suite.ts. */
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { suite } from './v1-sdk-suite.ts';

suite('http', (d) => new StreamableHTTPClientTransport(new URL(`${d.url}/mcp`)));
