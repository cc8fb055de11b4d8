import ArgumentParser
import Foundation
import GondolaServer

/// `gondola checkconfig`: reads the configuration as `serve` would (the file, `GONDOLA_*`
/// variables and flags) without starting anything, and names every problem with its key and
/// where it was written (a file's line, a variable, a flag); exits with 1 when there is one.
struct CheckConfig: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "checkconfig", abstract: "Check the configuration (file, GONDOLA_* variables, flags) and name every problem.")

    @OptionGroup var options: ConfigurationOptions

    func run() throws {
        let checked = ConfigurationLoader.check(file: options.config, environment: ProcessInfo.processInfo.environment, flags: options.flags)
        guard checked.problems.isEmpty else {
            for problem in checked.problems { FileHandle.standardError.write(Data("gondola: \(problem)\n".utf8)) }
            FileHandle.standardError.write(Data("gondola: \(checked.problems.count) problem(s); the hub would not start\n".utf8))
            throw ExitCode(1)
        }
        let configuration = checked.configuration
        print("configuration is valid" + (options.config.map { ": \($0)" } ?? ""))
        let missing = [("token_hmac_secret", configuration.tokenHMACSecret), ("api_key", configuration.apiKey)].filter { $0.1.isEmpty }.map(\.0)
        if !missing.isEmpty {
            print("not set: \(missing.joined(separator: ", ")); the hub generates and keeps them in \(configuration.dataFolder) at its start")
        }
    }
}

/// `gondola genconfig`: writes a starting configuration with fresh secrets, in the format the
/// file name's extension says (YAML and TOML with a comment on each key; JSON has no comments).
struct GenConfig: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "genconfig", abstract: "Write a starting configuration file with fresh secrets (.yaml, .toml or .json).")

    @Option(name: [.customShort("c"), .long], help: "The file to write; its extension picks the format.") var config = "config.yaml"

    func run() throws {
        do {
            try ConfigurationTemplate.write(to: config)
        } catch {
            FileHandle.standardError.write(Data("gondola: \(error)\n".utf8))
            throw ExitCode(1)
        }
        print("wrote \(config); start the hub with: gondola serve --config \(config)")
    }
}

/// `gondola keys`: every configuration key with what its value must be, its default, its
/// variable and flag, and whether a reload puts it in force; `--markdown` prints the tables
/// docs/configuration.md holds, and `--write-docs <folder>` writes them there.
struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List every configuration key: its value, default, variable, flag and whether SIGHUP reloads it.")

    @Flag(help: "Print the key tables of docs/configuration.md.") var markdown = false
    @Option(name: .customLong("write-docs"), help: "Write the key tables into <folder>/configuration.md, between its markers.")
    var docsFolder: String?

    func run() throws {
        guard let docsFolder else {
            print(markdown ? ConfigurationDocs.markdown() : ConfigurationDocs.text(), terminator: "")
            return
        }
        let path = docsFolder + "/" + ConfigurationDocs.page
        do {
            let text = try String(contentsOfFile: path, encoding: .utf8)
            try ConfigurationDocs.render(text).write(toFile: path, atomically: true, encoding: .utf8)
        } catch {
            FileHandle.standardError.write(Data("gondola: \(path): \(error)\n".utf8))
            throw ExitCode(1)
        }
        print("wrote the key tables of \(path)")
    }
}
