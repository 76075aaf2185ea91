import { endpointsByLabel } from "./generated/endpoints.ts";
import { nodeState, softwareNode } from "./test/support/software-node.ts";
const ask = async (label: string, body: string) => {
  const ep = endpointsByLabel.get(label)!;
  const r = await softwareNode(ep, nodeState(ep, 3000))({ method: "POST", url: "/", headers: {}, rawHeaders: [], body });
  console.log(label, body, "->", r?.status, r?.body);
};
await ask("dot", '{"jsonrpc":"2.0","id":1,"method":"chain_getBlockHash","params":["0xbb9"]}');
await ask("dot", '{"jsonrpc":"2.0","id":1,"method":"chain_getBlockHash","params":["0xbb8"]}');
await ask("dot", '{"jsonrpc":"2.0","id":1,"method":"chain_getBlockHash","params":[3001]}');
await ask("dot", '{"jsonrpc":"2.0","id":1,"method":"chain_getBlockHash","params":[]}');
await ask("btc", '{"jsonrpc":"1.0","id":1,"method":"getblockhash","params":{"height":2990}}');
await ask("btc", '{"jsonrpc":"1.0","id":1,"method":"getblockhash","params":[2990]}');
await ask("btc", '{"jsonrpc":"1.0","id":1,"method":"getblockhash","params":[3001]}');
await ask("btc", '{"jsonrpc":"1.0","id":1,"method":"getblockhash","params":["5"]}');
await ask("btc", '{"jsonrpc":"1.0","id":123456789012345678901234567890,"method":"getblockcount","params":[]}');
