"""The QnnInterface members, one module per API family — backend / error / log, profile, device, context, graph
execution, graph building, memory — mixed into `npurt.qnn.interface.QnnInterfaceTable`. Each reads the C arguments
(`args`), calls the objects of the layers below (contexts, graphs, the memory registry) and writes the out-parameters;
no runtime logic of its own."""
