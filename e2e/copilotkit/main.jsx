// The test page around support.jsx: CopilotKit's chat talking AG-UI to Waypoint through
// @ag-ui/client's HttpAgent, with no CopilotKit runtime in between (the test has no Node server).
// The page is served from the Waypoint server's origin; its query names the assistant and the key.
import { CopilotChat, CopilotKitProvider, HttpAgent } from "@copilotkit/react-core/v2";
import "@copilotkit/react-core/v2/styles.css";
import { createRoot } from "react-dom/client";
import { Interrupts, PickDate, ResumeThread, threadId } from "./support.jsx";

const query = new URLSearchParams(location.search);
const support = new HttpAgent({
  url: `/v1/ag-ui/${query.get("assistant")}`,
  headers: { Authorization: `Bearer ${query.get("key")}` },
  threadId,
});

function Page() {
  return (
    <CopilotKitProvider agents__unsafe_dev_only={{ support }} agentId="support" showDevConsole={false} enableInspector={false}
                        onError={(event) => { window.copilotkitErrors = [...(window.copilotkitErrors ?? []), String(event.error)]; }}>
      <ResumeThread />
      <PickDate />
      <Interrupts />
      <main style={{ height: "100vh" }}>
        <CopilotChat agentId="support" threadId={threadId} />
      </main>
    </CopilotKitProvider>
  );
}

createRoot(document.getElementById("root")).render(<Page />);
