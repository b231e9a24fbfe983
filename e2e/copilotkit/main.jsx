// The test page around support.jsx: CopilotKit's chat, whose runs go to the CopilotKit runtime of
// runtime.mjs (the same origin), which forwards them to Waypoint over AG-UI.
import { CopilotChat, CopilotKitProvider } from "@copilotkit/react-core/v2";
import "@copilotkit/react-core/v2/styles.css";
import { createRoot } from "react-dom/client";
import { Interrupts, PickDate, ResumeThread, threadId } from "./support.jsx";

function Page() {
  return (
    <CopilotKitProvider runtimeUrl="/api/copilotkit" agentId="support" enableInspector={false}
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
