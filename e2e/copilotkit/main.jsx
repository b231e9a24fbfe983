// Mounts docs/ag-ui.md's support page (page.jsx) for e2e/test_copilotkit.py.
import { createRoot } from "react-dom/client";
import { Support } from "./page.jsx";

createRoot(document.getElementById("root")).render(<Support />);
